cdef class Segment:
    cdef readonly object ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, truncated, missing

cdef class Skipped:
    cdef readonly object reason
