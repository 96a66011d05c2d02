# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Typed twin of the classic-pcap record loop and ``inspector.packets.parse_packet`` for the common case.

``parse_records`` walks the whole records of one chunk of a classic pcap file and appends, for each,
exactly what ``parse_packet(RawPacket(...))`` returns: a ``Segment`` built here for the common shapes
(Ethernet, Linux cooked v1/v2, loopback and raw IP links, 802.1Q tags, IPv4 without fragments and
IPv6 without extension headers carrying TCP), and for anything else (malformed, truncated,
fragmented, other protocols) the result of the pure ``parse_packet`` itself, so every skip reason
comes from one place. Records that straddle the end of the chunk are left to the caller.
``tests/inspector/test_native_packets.py`` holds both to the same results.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromObject


cdef enum:
    LT_NULL = 0
    LT_ETHERNET = 1
    LT_RAW_12 = 12
    LT_RAW_14 = 14
    LT_RAW = 101
    LT_LOOP = 108
    LT_LINUX_SLL = 113
    LT_IPV4 = 228
    LT_IPV6 = 229
    LT_LINUX_SLL2 = 276
    ETH_IPV4 = 0x0800
    ETH_IPV6 = 0x86DD


cdef inline unsigned int _u16(const unsigned char* c) noexcept:
    return (c[0] << 8) | c[1]


cdef inline unsigned int _u32(const unsigned char* c) noexcept:
    return (<unsigned int>c[0] << 24) | (<unsigned int>c[1] << 16) | (<unsigned int>c[2] << 8) | c[3]


cdef inline unsigned int _rec32(const unsigned char* c, bint little) noexcept:
    if little:
        return (<unsigned int>c[3] << 24) | (<unsigned int>c[2] << 16) | (<unsigned int>c[1] << 8) | c[0]
    return _u32(c)


cdef inline bint _vlan(unsigned int etype) noexcept:
    return etype == 0x8100 or etype == 0x88A8 or etype == 0x9100 or etype == 0x9200


cdef class PacketParser:
    """Holds what the records of one capture share: link type, time scale and the pure module's pieces."""

    cdef bint little
    cdef double scale
    cdef int linktype
    cdef object make_raw, parse_one, make_segment, empty, v4, v6
    cdef dict v4_names, v6_names
    # The two IPv4 names looked up last (a connection's two addresses): no int object or dict look-up for them.
    cdef unsigned int key0, key1
    cdef object name0, name1

    def __init__(self, bint little, double scale, int linktype, make_raw, parse_one, make_segment, empty,
                 dict v4_names, v4, dict v6_names, v6):
        self.little = little
        self.scale = scale
        self.linktype = linktype
        self.make_raw = make_raw
        self.parse_one = parse_one
        self.make_segment = make_segment
        self.empty = empty
        self.v4_names = v4_names
        self.v4 = v4
        self.v6_names = v6_names
        self.v6 = v6

    cdef inline object _v4_name(self, unsigned int key):
        """The text of IPv4 address ``key`` (the pure module's cache, and its maker for a new one)."""
        if key == self.key0 and self.name0 is not None:
            return self.name0
        if key == self.key1 and self.name1 is not None:
            return self.name1
        name = self.v4_names.get(key)
        if name is None:
            name = self.v4(key)
        self.key1, self.name1 = self.key0, self.name0
        self.key0, self.name0 = key, name
        return name

    def parse_records(self, buf, Py_ssize_t pos, list out):
        """Parse the records whole in ``buf`` (bytes-like) from ``pos``; returns (position after them, records
        parsed). Nothing it returns refers to ``buf``: packets and payloads are copies."""
        cdef const unsigned char[::1] view = buf
        cdef Py_ssize_t buflen = view.shape[0], start, end, count = 0
        cdef const unsigned char* c = &view[0] if buflen else NULL
        cdef unsigned int sec, frac, caplen, wirelen
        cdef double ts
        cdef object result
        while buflen - pos >= 16:
            sec = _rec32(c + pos, self.little)
            frac = _rec32(c + pos + 4, self.little)
            caplen = _rec32(c + pos + 8, self.little)
            wirelen = _rec32(c + pos + 12, self.little)
            start = pos + 16
            end = start + caplen
            if end > buflen:
                break
            ts = sec + frac * self.scale
            result = self._segment(c + start, caplen, wirelen, ts)
            if result is None:
                result = self.parse_one(self.make_raw(ts, self.linktype,
                                                      PyBytes_FromStringAndSize(<const char*>c + start, caplen),
                                                      caplen, wirelen))
            out.append(result)
            count += 1
            pos = end
        return pos, count

    cdef object _segment(self, const unsigned char* d, Py_ssize_t n, unsigned int wirelen, double ts):
        """The Segment of one record (``n`` bytes at ``d``), or None where the pure parser must decide."""
        cdef int lt = self.linktype
        cdef Py_ssize_t off, tcp_off, ip_end, start, extra
        cdef unsigned int etype, vihl, ihl, total, frag, plen, doff
        cdef object src_ip, dst_ip, key, payload
        if lt == LT_ETHERNET:
            if n < 14:
                return None
            off = 14
            etype = _u16(d + 12)
        elif lt == LT_LINUX_SLL:
            if n < 16:
                return None
            off = 16
            etype = _u16(d + 14)
        elif lt == LT_LINUX_SLL2:
            if n < 20:
                return None
            off = 20
            etype = _u16(d)
        elif lt == LT_NULL or lt == LT_LOOP:
            off = 4
            etype = 0
        elif lt == LT_RAW or lt == LT_RAW_12 or lt == LT_RAW_14 or lt == LT_IPV4 or lt == LT_IPV6:
            off = 0
            etype = 0
        else:
            return None
        while _vlan(etype):
            if n < off + 4:
                return None
            etype = _u16(d + off + 2)
            off += 4
        if etype == 0:
            if n <= off:
                return None
            if d[off] >> 4 == 4:
                etype = ETH_IPV4
            elif d[off] >> 4 == 6:
                etype = ETH_IPV6
            else:
                return None
        extra = <Py_ssize_t>wirelen - n if wirelen > n else 0
        if etype == ETH_IPV4:
            if n < off + 20:
                return None
            vihl = d[off]
            ihl = (vihl & 0x0F) << 2
            if vihl >> 4 != 4 or ihl < 20:
                return None
            frag = _u16(d + off + 6)
            if frag & 0x3FFF or d[off + 9] != 6:
                return None
            total = _u16(d + off + 2)
            if total == 0:
                ip_end = n + extra
            elif total < ihl:
                return None
            else:
                ip_end = off + total
            tcp_off = off + ihl
            src_ip = self._v4_name(_u32(d + off + 12))
            dst_ip = self._v4_name(_u32(d + off + 16))
        elif etype == ETH_IPV6:
            if n < off + 40 or d[off] >> 4 != 6 or d[off + 6] != 6:
                return None
            plen = _u16(d + off + 4)
            ip_end = off + 40 + plen if plen else n + extra
            tcp_off = off + 40
            if tcp_off > ip_end:
                return None
            key = PyBytes_FromStringAndSize(<const char*>d + off + 8, 16)
            src_ip = self.v6_names.get(key)
            if src_ip is None:
                src_ip = self.v6(key)
            key = PyBytes_FromStringAndSize(<const char*>d + off + 24, 16)
            dst_ip = self.v6_names.get(key)
            if dst_ip is None:
                dst_ip = self.v6(key)
        else:
            return None
        if n < tcp_off + 14:
            return None
        doff = d[tcp_off + 12]
        start = tcp_off + ((doff >> 4) << 2)
        if start < tcp_off + 20 or start > ip_end or start > n:
            return None
        if ip_end <= n:
            payload = (PyMemoryView_FromObject(PyBytes_FromStringAndSize(<const char*>d + start, ip_end - start))
                       if ip_end > start else self.empty)
            return self.make_segment(ts, src_ip, _u16(d + tcp_off), dst_ip, _u16(d + tcp_off + 2),
                                     _u32(d + tcp_off + 4), _u32(d + tcp_off + 8), d[tcp_off + 13], payload,
                                     False, 0)
        payload = (PyMemoryView_FromObject(PyBytes_FromStringAndSize(<const char*>d + start, n - start))
                   if n > start else self.empty)
        return self.make_segment(ts, src_ip, _u16(d + tcp_off), dst_ip, _u16(d + tcp_off + 2),
                                 _u32(d + tcp_off + 4), _u32(d + tcp_off + 8), d[tcp_off + 13], payload,
                                 True, ip_end - n)
