cimport cython
from inspector.kafka.connection cimport KafkaConnection
from inspector.kafka.framing cimport Framer
from inspector.tcp.reassembly cimport Reassembler
from inspector.tcp.stream_events cimport StreamData

cdef class ConnectionSpec:
    cdef readonly object conn_id, a, b, client_side, synced, limits, body_text

    cpdef KafkaConnection connection(self)

cdef class _Tracked:
    cdef public list held
    cdef public ConnectionSpec _spec
    cdef public object _conn, mode, ignored_bytes, framer_bytes, reasm_bytes, tls_state, tls_stream, sniffed

cdef class Inspector:
    cdef public object ports, conn_id_base, limits, max_held, evicted, released
    cdef public object body_text, keylog
    cdef public dict conns
    cdef public list closed
    cdef public object held_bytes, max_conn_id, _holders, _holders_max, _reasm_held
    cdef public Reassembler reassembler

    @cython.locals(reassembler=Reassembler)
    cpdef list segment(self, seg)
    @cython.locals(tracked=_Tracked, conn=KafkaConnection)
    cpdef list _dispatch(self, events)
    @cython.locals(tracked=_Tracked, conn=KafkaConnection, framer=Framer)
    cpdef _data(self, StreamData ev, list out)
    cpdef _emit(self, _Tracked tracked, list events, list out)

cpdef bint _confirms_kafka(list events) except -1
