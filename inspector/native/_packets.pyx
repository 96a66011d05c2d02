# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The classic pcap record loop: slice the records lying whole in one chunk of the file and parse each.

``RecordLoop.parse_records`` walks the 16-byte record headers (in the file's byte order) and calls
``parse(frame bytes, linktype, ts, caplen, wirelen)`` — ``inspector.capture.packets.parse_frame``, the one header
parser — on a copy of each record's bytes, appending what it returns. Records that straddle the end of the
chunk are left to the caller (``inspector.capture.parser``). What is C here is only the slicing: reading the
record headers from the buffer and making each record's bytes without a Python slice.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize


cdef inline unsigned int _rec32(const unsigned char* c, bint little) noexcept:
    if little:
        return (<unsigned int>c[3] << 24) | (<unsigned int>c[2] << 16) | (<unsigned int>c[1] << 8) | c[0]
    return (<unsigned int>c[0] << 24) | (<unsigned int>c[1] << 16) | (<unsigned int>c[2] << 8) | c[3]


cdef class RecordLoop:
    """The records of one classic pcap file (its byte order, time scale and link type), parsed by ``parse``."""

    cdef bint little
    cdef double scale
    cdef int linktype
    cdef object parse

    def __init__(self, bint little, double scale, int linktype, parse):
        self.little = little
        self.scale = scale
        self.linktype = linktype
        self.parse = parse

    def parse_records(self, buf, Py_ssize_t pos, list out):
        """Parse the records whole in ``buf`` (bytes-like) from ``pos``; returns (position after them, records
        parsed). Nothing it returns refers to ``buf``: each record is parsed from a copy of its bytes."""
        cdef const unsigned char[::1] view = buf
        cdef Py_ssize_t buflen = view.shape[0], start, end, count = 0
        cdef const unsigned char* c = &view[0] if buflen else NULL
        cdef unsigned int sec, frac, caplen, wirelen
        cdef double ts
        parse = self.parse
        linktype = self.linktype
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
            out.append(parse(PyBytes_FromStringAndSize(<const char*>c + start, caplen), linktype, ts, caplen,
                             wirelen))
            count += 1
            pos = end
        return pos, count
