# Shared by the typed twins that write JSON text (decoders/native/_records.pyx, inspector/native/_body.pyx):
# compiled into each of them (inline), so nothing of this file runs on its own.

cdef inline char* write_int(char* o, long long v) noexcept:
    """Write ``v`` in decimal at ``o`` (room for 20 characters); returns the end."""
    cdef char tmp[24]
    cdef int k = 0
    cdef unsigned long long u
    if v < 0:
        o[0] = b'-'
        o += 1
        u = <unsigned long long>(-(v + 1)) + 1
    else:
        u = <unsigned long long>v
    while True:
        tmp[k] = <char>(48 + u % 10)
        k += 1
        u //= 10
        if u == 0:
            break
    while k:
        k -= 1
        o[0] = tmp[k]
        o += 1
    return o
