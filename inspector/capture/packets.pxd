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
cdef class LinkType:
    cdef readonly str name
    cdef readonly Py_ssize_t header, ethertype_at

cdef long _last_lt
cdef LinkType _last_link

@cython.locals(n=Py_ssize_t, off=Py_ssize_t, etype=cython.long, version=cython.int, link=LinkType)
cpdef object parse_frame(bytes data, long lt, double ts, Py_ssize_t caplen, Py_ssize_t wirelen)
@cython.locals(vihl=cython.int, ihl=cython.long, proto=cython.int, total=cython.long, ip_end=Py_ssize_t)
cdef object _ipv4(bytes data, Py_ssize_t n, Py_ssize_t off, double ts, Py_ssize_t caplen, Py_ssize_t wirelen)
@cython.locals(plen=cython.long, nh=cython.int, hlen=Py_ssize_t, tcp_off=Py_ssize_t, ip_end=Py_ssize_t)
cdef object _ipv6(bytes data, Py_ssize_t n, Py_ssize_t off, double ts, Py_ssize_t caplen, Py_ssize_t wirelen)
@cython.locals(start=Py_ssize_t, missing=Py_ssize_t)
cdef object _tcp(bytes data, Py_ssize_t n, double ts, str src_ip, str dst_ip, Py_ssize_t tcp_off, Py_ssize_t ip_end)
