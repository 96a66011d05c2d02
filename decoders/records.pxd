cimport cython

cdef class Records:
    cdef readonly object _data

@cython.locals(r=Records)
cpdef Records _new_records(data)
