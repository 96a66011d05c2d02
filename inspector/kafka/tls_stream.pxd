cimport cython
from inspector.kafka.connection cimport KafkaConnection, KafkaMessage
from inspector.tls.tls_events cimport TlsApplicationData, TlsEncrypted
from inspector.tls.session cimport TlsSession

cdef class TlsStream:
    cdef public object client_side, holes, lost, unread, wire
    cdef public KafkaConnection conn
    cdef public TlsSession session

    cpdef list data(self, side, ts, data)
    @cython.locals(conn=KafkaConnection, out=list)
    cpdef list _plaintext(self, list events)
    cpdef list _mark(self, list events)
