# Shared by the typed twins that write JSON text (decoders/native/_records.pyx, inspector/native/_body.pyx)
# and the compiled decoders' JSON writers (decoders/accel/_text.pxd): compiled into each of them (inline), so
# nothing of this file runs on its own.

from libc.stdint cimport uint64_t
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


cdef inline bint _plain8(const unsigned char* p, bint ascii_only) noexcept:
    """Whether none of the 8 bytes at ``p`` needs escaping in a JSON string (a control character, '"' or a
    backslash), nor, with ``ascii_only``, is beyond ASCII: the word tests of "Bit Twiddling Hacks" (hasless,
    haszero), exact for "is there any"."""
    cdef uint64_t v, q, b
    memcpy(&v, p, 8)
    q = v ^ 0x2222222222222222ULL  # a zero byte where v has '"'
    b = v ^ 0x5C5C5C5C5C5C5C5CULL  # ... where v has a backslash
    return (((v if ascii_only else 0) | ((v - 0x2020202020202020ULL) & ~v) | ((q - 0x0101010101010101ULL) & ~q)
             | ((b - 0x0101010101010101ULL) & ~b)) & 0x8080808080808080ULL) == 0


cdef inline char* write_string(char* o, const unsigned char* p, Py_ssize_t k, bint ascii_only) noexcept:
    """UTF-8 ``p[:k]`` as a JSON string, quoted and escaped as orjson escapes it, at ``o`` (room for 6k + 2);
    returns the end. With ``ascii_only``, NULL when a byte is not ASCII (nothing to rely on written)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c
    o[0] = b'"'
    o += 1
    while i < k:
        if i + 8 <= k and _plain8(p + i, ascii_only):  # eight bytes to copy as they are
            memcpy(o, p + i, 8)
            o += 8
            i += 8
            continue
        c = p[i]
        i += 1
        if c >= 0x20 and c != 0x22 and c != 0x5C:
            if ascii_only and c >= 0x80:
                return NULL
            o[0] = <char>c
            o += 1
        elif c == 0x22 or c == 0x5C:
            o[0] = b'\\'
            o[1] = <char>c
            o += 2
        elif c == 0x08 or c == 0x09 or c == 0x0A or c == 0x0C or c == 0x0D:
            o[0] = b'\\'
            o[1] = b'b' if c == 0x08 else b't' if c == 0x09 else b'n' if c == 0x0A else b'f' if c == 0x0C else b'r'
            o += 2
        else:
            memcpy(o, b"\\u00", 4)
            o[4] = b"0123456789abcdef"[c >> 4]
            o[5] = b"0123456789abcdef"[c & 15]
            o += 6
    o[0] = b'"'
    return o + 1
