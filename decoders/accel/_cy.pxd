# Inline readers shared by the compiled decoders (decoders/accel/*.pyx, generated).
# Each reads from ``c`` (the frame's bytes) at ``p`` after the caller checked the bytes are there. The readers
# check with the ``_at`` helpers, which note a failure naming the field path and offset and say so (the reader
# then returns FAILED: decoders/accel/_where.pyx); the JSON writers with the plain ones, which raise (any failure:
# the readers decode the frame).
# cython: language_level=3

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy

from decoders.accel._where cimport LONG_VARINT, SHORT, TRUNCATED, Where, note


cdef extern from "Python.h":
    # A dict with room for ``minused`` keys (CPython's; a dict literal of 6 to 8 keys grows once as it is filled).
    dict new_dict "_PyDict_NewPresized"(Py_ssize_t minused)


cdef inline void list_put(object out, Py_ssize_t i, object x) noexcept:
    """Slot ``i`` of a list made by ``PyList_New`` (an array's, of the count its guard checked; a slot not yet
    filled is NULL, which the list's deallocation and the garbage collector skip): ``x``, its own reference."""
    Py_INCREF(x)
    PyList_SET_ITEM(out, i, x)


cdef inline bint need_at(Py_ssize_t p, Py_ssize_t k, Py_ssize_t L, Where* up, const char* name,
                         Py_ssize_t index) noexcept:
    """Whether the ``k`` bytes at ``p`` are missing (the field truncated: noted)."""
    if k > L - p:
        note(TRUNCATED, 0, p, L, up, name, index)
        return True
    return False


cdef inline bint need_len(Py_ssize_t p, long long n, Py_ssize_t L, Where* up, const char* name,
                          Py_ssize_t index) noexcept:
    """Whether the ``n`` bytes of a length-prefixed field at ``p`` are missing (its length too long: noted)."""
    if n > L - p:
        note(SHORT, n, p, L, up, name, index)
        return True
    return False


cdef inline Py_ssize_t uvar_at(const unsigned char* c, Py_ssize_t p, Py_ssize_t L, long long* out, Where* up,
                               const char* name, Py_ssize_t index) noexcept:
    """An unsigned varint of at most 5 bytes, or -1: failing where the plain reader fails (past its first byte,
    a truncation is at the second), noted."""
    cdef long long v
    cdef int shift = 7
    cdef unsigned char x
    cdef Py_ssize_t second
    if p >= L:
        note(TRUNCATED, 0, p, L, up, name, index)
        return -1
    x = c[p]
    p += 1
    if x < 0x80:
        out[0] = x
        return p
    second = p
    v = x & 0x7F
    while True:
        if shift > 28:
            note(LONG_VARINT, 0, p, L, up, name, index)
            return -1
        if p >= L:
            note(TRUNCATED, 0, second, L, up, name, index)
            return -1
        x = c[p]
        p += 1
        v |= (<long long>(x & 0x7F)) << shift
        if x < 0x80:
            out[0] = v
            return p
        shift += 7

cdef inline int need(Py_ssize_t p, Py_ssize_t k, Py_ssize_t L) except -1:
    if k > L - p:
        raise IndexError("truncated")
    return 0


cdef inline int rd8(const unsigned char* c, Py_ssize_t p) noexcept:
    return <signed char>c[p]


cdef inline int rd16(const unsigned char* c, Py_ssize_t p) noexcept:
    return <short>((c[p] << 8) | c[p + 1])


cdef inline unsigned int ru16(const unsigned char* c, Py_ssize_t p) noexcept:
    return (c[p] << 8) | c[p + 1]


cdef inline int rd32(const unsigned char* c, Py_ssize_t p) noexcept:
    return <int>((<unsigned int>c[p] << 24) | (<unsigned int>c[p + 1] << 16) | (<unsigned int>c[p + 2] << 8)
                 | <unsigned int>c[p + 3])


cdef inline unsigned int ru32(const unsigned char* c, Py_ssize_t p) noexcept:
    return (<unsigned int>c[p] << 24) | (<unsigned int>c[p + 1] << 16) | (<unsigned int>c[p + 2] << 8) | c[p + 3]


cdef inline unsigned long long ru64(const unsigned char* c, Py_ssize_t p) noexcept:
    return (<unsigned long long>ru32(c, p) << 32) | ru32(c, p + 4)


cdef inline long long rd64(const unsigned char* c, Py_ssize_t p) noexcept:
    return <long long>ru64(c, p)


cdef inline double rf64(const unsigned char* c, Py_ssize_t p) noexcept:
    cdef unsigned long long u = ru64(c, p)
    cdef double d
    memcpy(&d, &u, 8)
    return d


cdef inline Py_ssize_t uvar(const unsigned char* c, Py_ssize_t p, Py_ssize_t L, long long* out) except -1:
    """An unsigned varint of at most 5 bytes (as the pure decoder reads them)."""
    cdef long long v
    cdef int shift = 7
    cdef unsigned char x
    if p >= L:
        raise IndexError("truncated")
    x = c[p]
    p += 1
    if x < 0x80:
        out[0] = x
        return p
    v = x & 0x7F
    while True:
        if shift > 28:
            raise ValueError("unsigned varint longer than 5 bytes")
        if p >= L:
            raise IndexError("truncated")
        x = c[p]
        p += 1
        v |= (<long long>(x & 0x7F)) << shift
        if x < 0x80:
            out[0] = v
            return p
        shift += 7


cdef inline list arr_fixed(const unsigned char* c, Py_ssize_t p, Py_ssize_t L, long long n, char kind):
    """``n`` big-endian values of struct format ``kind`` (one of b h H i I q d ?)."""
    cdef Py_ssize_t size, i
    cdef list out
    if kind == b'b' or kind == b'?':
        size = 1
    elif kind == b'h' or kind == b'H':
        size = 2
    elif kind == b'i' or kind == b'I':
        size = 4
    else:
        size = 8
    if n * size > L - p:
        raise IndexError("truncated")
    out = [None] * <Py_ssize_t>n
    for i in range(<Py_ssize_t>n):
        if kind == b'i':
            out[i] = rd32(c, p)
        elif kind == b'q':
            out[i] = rd64(c, p)
        elif kind == b'h':
            out[i] = rd16(c, p)
        elif kind == b'b':
            out[i] = rd8(c, p)
        elif kind == b'H':
            out[i] = ru16(c, p)
        elif kind == b'I':
            out[i] = ru32(c, p)
        elif kind == b'?':
            out[i] = c[p] != 0
        else:
            out[i] = rf64(c, p)
        p += size
    return out
