cimport cython

cdef class Record:
    cdef readonly object content_type, version, fragment, ts, header

cdef class RecordSplitter:
    cdef public bytearray _buffer
    cdef public object error, malformed_bytes, records

    @cython.locals(buf=bytearray, out=list, pos=Py_ssize_t, length=Py_ssize_t)
    cpdef list feed(self, data, ts)
    @cython.locals(out=list, pos=Py_ssize_t, end=Py_ssize_t, stop=Py_ssize_t, length=Py_ssize_t,
                   content_type=cython.int, major=cython.int, minor=cython.int)
    cpdef tuple _split(self, bytes data, ts)
