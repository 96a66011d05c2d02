cdef class ElementBudget:
    cdef public Py_ssize_t left
    cdef public Py_ssize_t stops
