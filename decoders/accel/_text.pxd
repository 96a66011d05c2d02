# Inline writers of the compiled decoders' JSON text (decoders/accel/*.pyx, generated, the APIs in
# decoders.codegen.render_cy.TEXT_APIS): a body written as JSON straight from the frame's bytes, the text the
# events' body column (inspector/native/_body.pyx) would write for the decoded dict. Each writer returns NULL
# (or raises) for what it leaves to that dict path: a string that is not ASCII, a float, a record set the
# records twin does not summarise.
# cython: language_level=3

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdlib cimport realloc
from libc.string cimport memcpy

from decoders.native._json cimport write_int, write_string

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


cdef inline int jstr(JOut* o, const unsigned char* p, Py_ssize_t k) except -1:
    """``p[:k]`` as a JSON string, escaped as orjson escapes it; raises when a byte is not ASCII (its text
    depends on how the dict path decodes it)."""
    cdef char* start = jroom(o, k * 6 + 2)
    cdef char* end = write_string(start, p, k, True)
    if end == NULL:
        raise ValueError("not ASCII")
    o.size += end - start
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
