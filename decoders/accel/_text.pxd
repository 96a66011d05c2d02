# Inline writers of the compiled decoders' JSON text (decoders/accel/*.pyx, generated, the APIs in
# decoders.codegen.render_cy.TEXT_APIS): a body written as JSON straight from the frame's bytes, the text the
# events' body column (inspector/native/_body.pyx) would write for the decoded dict. Each writer returns NULL
# (or raises) for what it leaves to that dict path: a string that is not ASCII, a float, a record set the
# records twin does not summarise.
# cython: language_level=3

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport uint64_t
from libc.stdlib cimport realloc
from libc.string cimport memcpy

from decoders.native._json cimport write_int

# decoders/native/_records.pyx's writer of headers-level record set summaries (its HEADERS_WRITER capsule).
ctypedef Py_ssize_t (*_bound_fn)(const unsigned char*, Py_ssize_t) noexcept
ctypedef Py_ssize_t (*_write_fn)(const unsigned char*, Py_ssize_t, char*) noexcept

cdef struct HeadersWriter:
    _bound_fn bound
    _write_fn write

cdef struct JOut:
    char* data
    Py_ssize_t size
    Py_ssize_t cap
    HeadersWriter* headers  # NULL: record sets are left to the dict path


cdef inline HeadersWriter* headers_writer(object capsule):
    """The records twin's writer from its capsule, or NULL."""
    if capsule is None or not PyCapsule_IsValid(capsule, b"decoders.native._records.HeadersWriter.v1"):
        return NULL
    return <HeadersWriter*>PyCapsule_GetPointer(capsule, b"decoders.native._records.HeadersWriter.v1")


cdef inline int _grow(JOut* o, Py_ssize_t k) except -1:
    cdef Py_ssize_t cap = o.cap * 2 if o.cap else 1 << 16
    cdef char* data
    while cap < o.size + k:
        cap *= 2
    data = <char*>realloc(o.data, cap)
    if data == NULL:
        raise MemoryError()
    o.data = data
    o.cap = cap
    return 0


cdef inline char* jroom(JOut* o, Py_ssize_t k) except NULL:
    """Room for ``k`` more bytes; where to write them."""
    if o.size + k > o.cap:
        _grow(o, k)
    return o.data + o.size


cdef inline int jput(JOut* o, const char* s, Py_ssize_t k) except -1:
    memcpy(jroom(o, k), s, k)
    o.size += k
    return 0


cdef inline int jint(JOut* o, long long v) except -1:
    cdef char* at = jroom(o, 24)
    o.size += write_int(at, v) - at
    return 0


cdef inline int jbool(JOut* o, bint v) except -1:
    if v:
        return jput(o, b"true", 4)
    return jput(o, b"false", 5)


cdef inline bint _ascii_plain8(const unsigned char* p) noexcept:
    """Whether the 8 bytes at ``p`` are ASCII and none needs escaping in a JSON string (a control character,
    '"' or a backslash): the word tests of "Bit Twiddling Hacks" (hasless, haszero)."""
    cdef uint64_t v, q, b
    memcpy(&v, p, 8)
    q = v ^ 0x2222222222222222ULL
    b = v ^ 0x5C5C5C5C5C5C5C5CULL
    return ((v | ((v - 0x2020202020202020ULL) & ~v) | ((q - 0x0101010101010101ULL) & ~q)
             | ((b - 0x0101010101010101ULL) & ~b)) & 0x8080808080808080ULL) == 0


cdef inline int jstr(JOut* o, const unsigned char* p, Py_ssize_t k) except -1:
    """``p[:k]`` as a JSON string, escaped as orjson escapes it; raises when a byte is not ASCII (its text
    depends on how the dict path decodes it)."""
    cdef char* start = jroom(o, k * 6 + 2)
    cdef char* w = start
    cdef Py_ssize_t i = 0
    cdef unsigned char ch
    w[0] = b'"'
    w += 1
    while i < k:
        if i + 8 <= k and _ascii_plain8(p + i):
            memcpy(w, p + i, 8)
            w += 8
            i += 8
            continue
        ch = p[i]
        i += 1
        if ch >= 0x80:
            raise ValueError("not ASCII")
        if ch >= 0x20 and ch != 0x22 and ch != 0x5C:
            w[0] = <char>ch
            w += 1
        elif ch == 0x22 or ch == 0x5C:
            w[0] = b'\\'
            w[1] = <char>ch
            w += 2
        elif ch == 0x08 or ch == 0x09 or ch == 0x0A or ch == 0x0C or ch == 0x0D:
            w[0] = b'\\'
            w[1] = b'b' if ch == 0x08 else b't' if ch == 0x09 else b'n' if ch == 0x0A else b'f' if ch == 0x0C else b'r'
            w += 2
        else:
            memcpy(w, b"\\u00", 4)
            w[4] = b"0123456789abcdef"[ch >> 4]
            w[5] = b"0123456789abcdef"[ch & 15]
            w += 6
    w[0] = b'"'
    o.size += w + 1 - start
    return 0


cdef inline int jhex(JOut* o, const unsigned char* p, Py_ssize_t k) except -1:
    """``p[:k]`` as a string of lowercase hex digits (what the events' encoder makes of bytes)."""
    cdef char* w = jroom(o, 2 * k + 2)
    cdef Py_ssize_t i
    w[0] = b'"'
    for i in range(k):
        w[1 + 2 * i] = b"0123456789abcdef"[p[i] >> 4]
        w[2 + 2 * i] = b"0123456789abcdef"[p[i] & 15]
    w[2 * k + 1] = b'"'
    o.size += 2 * k + 2
    return 0


cdef inline int juuid(JOut* o, const unsigned char* p) except -1:
    """16 bytes as Kafka's Uuid.toString(): URL-safe base64 without padding (22 characters), quoted."""
    cdef const char* alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    cdef char* w = jroom(o, 24)
    cdef int i
    cdef unsigned int v
    w[0] = b'"'
    for i in range(5):
        v = (<unsigned int>p[3 * i] << 16) | (<unsigned int>p[3 * i + 1] << 8) | p[3 * i + 2]
        w[1 + 4 * i] = alphabet[(v >> 18) & 63]
        w[2 + 4 * i] = alphabet[(v >> 12) & 63]
        w[3 + 4 * i] = alphabet[(v >> 6) & 63]
        w[4 + 4 * i] = alphabet[v & 63]
    w[21] = alphabet[p[15] >> 2]
    w[22] = alphabet[(p[15] & 3) << 4]
    w[23] = b'"'
    o.size += 24
    return 0


cdef inline int jrecords(JOut* o, const unsigned char* p, Py_ssize_t k) except -1:
    """A record set's headers-level summary, written by the records twin; raises where it leaves it."""
    cdef Py_ssize_t bound
    if o.headers == NULL:
        raise ValueError("no records writer")
    bound = o.headers.bound(p, k)
    if bound < 0:
        raise ValueError("record set left to the dict path")
    o.size += o.headers.write(p, k, jroom(o, bound))
    return 0
