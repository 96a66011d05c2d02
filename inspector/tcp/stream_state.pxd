# The sequence mask as a C integer (the module's SEQ_MASK, under a private name): the arithmetic is C.
cdef long long _MASK

cdef class DirState:
    cdef public list heap
    cdef public object src, dst, fin_off, base_seq, nxt, nxt_seq, buf_bytes, seen, delivered, gap, retrans
    cdef public object ooo, trunc
    cdef public bint base_set

cdef class ConnState:
    cdef public tuple dirs
    cdef public object conn_id, keys, last_ts
    cdef public bint closed, saw_syn
