cimport cython
from inspector.tls.tls_records cimport Record

cdef class Tls13Decryptor:
    cdef public object _aead, _iv, secret, seq, suite

    @cython.locals(fragment=bytes, inner=bytes, end=Py_ssize_t)
    cpdef tuple open(self, Record record)
