cimport cython

cdef class _Dir:
    cdef public object src, dst, heap, fin_off, base_seq, nxt, nxt_seq, buf_bytes, seen, delivered, gap, retrans
    cdef public object ooo, trunc
    cdef public bint base_set

cdef class _Conn:
    cdef public object conn_id, dirs, keys, last_ts
    cdef public bint closed, saw_syn

cdef class Reassembler:
    cdef public object max_buffered_per_direction, max_connections, _flows, _conns, _next_id, _tiebreak, buffered
    cdef public object ignored_segments

    @cython.locals(d=_Dir, o=_Dir, conn=_Conn)
    cpdef list feed(self, seg)
