cdef class RawPacket:
    cdef readonly object ts, linktype, data, caplen, wirelen
