cimport cython

cdef class Segment:
    cdef readonly object ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, truncated, missing

@cython.locals(s=Segment)
cpdef Segment _new_segment(ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, payload, truncated, missing)

cdef class Skipped:
    cdef readonly object reason

cdef long long _key0, _key1
cdef str _name0, _name1
cpdef str _v4_name(long long addr)
@cython.locals(x=cython.uchar)
cpdef int _u8(bytes b, Py_ssize_t p) except? -1
@cython.locals(hi=cython.uchar, lo=cython.uchar)
cpdef long _be16(bytes b, Py_ssize_t p) except? -1
@cython.locals(r=cython.ulong)
cpdef unsigned long _be32(bytes b, Py_ssize_t p) except? 0
@cython.locals(n=Py_ssize_t, off=Py_ssize_t, etype=cython.long, version=cython.int, vihl=cython.int, ihl=cython.long,
               proto=cython.int, tcp_off=Py_ssize_t, total=cython.long,
               ip_end=Py_ssize_t, plen=cython.long, nh=cython.int, hlen=Py_ssize_t, start=Py_ssize_t,
               missing=Py_ssize_t)
cpdef object parse_frame(bytes data, long lt, double ts, Py_ssize_t caplen, Py_ssize_t wirelen)
