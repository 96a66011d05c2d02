cimport cython

cdef class Segment:
    cdef readonly object ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, truncated, missing

@cython.locals(s=Segment)
cpdef Segment _new_segment(ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, truncated, missing)

cdef class Skipped:
    cdef readonly object reason
