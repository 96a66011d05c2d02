cdef class TlsApplicationData:
    cdef readonly object from_client, ts, data

cdef class TlsEncrypted:
    cdef readonly object from_client, ts, size, records
