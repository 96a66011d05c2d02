cimport cython

cdef class ElementBudget:
    cdef public Py_ssize_t left
    cdef public Py_ssize_t stops

cdef Py_ssize_t _V2_MIN, _V0_MIN, _V1_MIN, _OVERHEAD, _MAGIC

@cython.locals(end=Py_ssize_t, count=Py_ssize_t, q=Py_ssize_t, length=cython.longlong, minimum=Py_ssize_t,
               b0=cython.uchar, b1=cython.uchar, b2=cython.uchar, b3=cython.uchar, magic=cython.uchar)
cpdef Py_ssize_t record_set_elements(bytes b, Py_ssize_t p, Py_ssize_t n) except -1
