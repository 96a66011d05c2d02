# Shared by the typed twins that write JSON text (decoders/native/_records.pyx, inspector/native/_body.pyx):
# compiled into each of them (inline), so nothing of this file runs on its own.

from libc.string cimport memcpy


cdef inline char* write_int(char* o, long long v) noexcept:
    """Write ``v`` in decimal at ``o`` (room for 20 characters); returns the end. Two digits per step."""
    cdef const char* pairs = (b"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              b"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              b"8081828384858687888990919293949596979899")
    cdef char tmp[24]
    cdef int k = 24
    cdef unsigned long long u, q
    cdef unsigned int r
    if v < 0:
        o[0] = b'-'
        o += 1
        u = <unsigned long long>(-(v + 1)) + 1
    else:
        u = <unsigned long long>v
    while u >= 100:
        q = u // 100
        r = <unsigned int>(u - q * 100) * 2
        k -= 2
        tmp[k] = pairs[r]
        tmp[k + 1] = pairs[r + 1]
        u = q
    if u >= 10:
        r = <unsigned int>u * 2
        k -= 2
        tmp[k] = pairs[r]
        tmp[k + 1] = pairs[r + 1]
    else:
        k -= 1
        tmp[k] = <char>(48 + u)
    memcpy(o, tmp + k, 24 - k)
    return o + 24 - k
