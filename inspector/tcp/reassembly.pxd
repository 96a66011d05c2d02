cimport cython
from inspector.capture.packets cimport Segment
from inspector.tcp.stream_events cimport StreamData, _new_stream_data
from inspector.tcp.stream_state cimport ConnState, DirState

cdef int _SYN, _FIN, _RST, _ACK
cdef long long _MASK, _ACK_WINDOW

cdef class Reassembler:
    cdef public dict _flows, _conns
    cdef public object max_buffered_per_direction, max_connections, _next_id, _tiebreak, buffered
    cdef public dict ignored
    cdef object _src0, _dst0, _src1, _dst1
    cdef long _sport0, _dport0, _sport1, _dport1
    cdef tuple _hit0, _hit1

    cpdef _forget_hits(self)
    @cython.locals(d=DirState, o=DirState, conn=ConnState, flags=cython.int, sport=cython.long,
                   dport=cython.long, nxt_seq=cython.longlong, seq=cython.longlong, ack=cython.longlong, delta=cython.longlong,
                   size=cython.Py_ssize_t)
    cpdef list feed(self, Segment seg)
