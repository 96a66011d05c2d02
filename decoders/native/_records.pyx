# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Typed twin of ``decoders.records.decode_records(data, "headers")`` for the common case, as JSON.

``headers_json(data)`` returns the compact JSON text (bytes) of the summary the pure function
returns, exactly as ``orjson.dumps`` writes it, when every batch of the field is a whole magic-2
batch (a partial last batch included); for anything else (legacy magic, short or bad lengths) it
returns ``None`` and the pure function decides. ``tests/decoders/test_native.py`` holds both to
the same text.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_New
from libc.string cimport memcpy, strlen

from decoders.native._json cimport write_int

#: The capsule's name: a twin that takes the writer checks it (another layout gets another name).
cdef const char* HEADERS_WRITER_NAME = b"decoders.native._records.HeadersWriter.v1"

cdef enum:
    HEADER_SIZE = 61
    MIN_LENGTH = 49  # batchLength counts from partitionLeaderEpoch
    LOG_OVERHEAD = 12
    MAGIC_POS = 16
    # Upper bound of one batch's JSON text (keys, 13 integers of at most 20 characters, flags).
    BATCH_MAX = 640

cdef const char* _NAMES[8]
_NAMES[:] = [b"none", b"gzip", b"snappy", b"lz4", b"zstd", b"unknown(5)", b"unknown(6)", b"unknown(7)"]


cdef inline long long _rd(const unsigned char* c, Py_ssize_t p, int k) noexcept:
    cdef unsigned long long u = 0
    cdef int i
    for i in range(k):
        u = (u << 8) | c[p + i]
    if k == 8:
        return <long long>u
    if k == 4:
        return <int>(<unsigned int>u)
    return <short>(<unsigned short>u)


cdef inline char* _put(char* o, const char* s) noexcept:
    cdef size_t k = strlen(s)  # inlined with a literal, the C compiler knows it: a few fixed-size stores
    memcpy(o, s, k)
    return o + k


cdef inline char* _bool(char* o, bint v) noexcept:
    return _put(o, b"true" if v else b"false")


cdef Py_ssize_t headers_bound(const unsigned char* c, Py_ssize_t n) noexcept:
    """An upper bound of the JSON text's size, or -1 for a shape this twin does not handle."""
    cdef Py_ssize_t pos = 0, rem, count = 0
    cdef long long length
    while pos < n:
        rem = n - pos
        if rem < HEADER_SIZE or c[pos + MAGIC_POS] != 2:
            return -1
        length = _rd(c, pos + 8, 4)
        if length < MIN_LENGTH:
            return -1
        if pos + LOG_OVERHEAD + length > n:
            break  # a partial last batch
        count += 1
        pos += LOG_OVERHEAD + length
    return count * BATCH_MAX + 128


cdef Py_ssize_t headers_write(const unsigned char* c, Py_ssize_t n, char* buf) noexcept:
    """Write the JSON text of a field headers_bound() accepted into ``buf`` (room for that bound); its size."""
    cdef char* o = _put(buf, b'{"size":')
    cdef Py_ssize_t pos = 0, partial = 0
    cdef long long length
    cdef int attrs
    o = write_int(o, n)
    o = _put(o, b',"status":"ok","batches":[')
    while pos < n:
        length = _rd(c, pos + 8, 4)
        if pos + LOG_OVERHEAD + length > n:
            partial = n - pos
            break
        if pos:
            o[0] = b','
            o += 1
        attrs = <int>_rd(c, pos + 21, 2)
        o = _put(o, b'{"byteOffset":')
        o = write_int(o, pos)
        o = _put(o, b',"baseOffset":')
        o = write_int(o, _rd(c, pos, 8))
        o = _put(o, b',"batchLength":')
        o = write_int(o, length)
        o = _put(o, b',"partitionLeaderEpoch":')
        o = write_int(o, _rd(c, pos + 12, 4))
        o = _put(o, b',"magic":2,"crc":')
        o = write_int(o, <unsigned int>_rd(c, pos + 17, 4))
        o = _put(o, b',"attributes":')
        o = write_int(o, attrs)
        o = _put(o, b',"compression":"')
        o = _put(o, _NAMES[attrs & 0x07])
        o = _put(o, b'","timestampType":"LogAppendTime"' if attrs & 0x08 else b'","timestampType":"CreateTime"')
        # Spelled out, not looped over tables: each key a literal (fixed-size stores, no strlen or memcpy
        # call) and each integer read at a constant offset and width.
        o = _bool(_put(o, b',"isTransactional":'), attrs & 0x10)
        o = _bool(_put(o, b',"isControl":'), attrs & 0x20)
        o = _bool(_put(o, b',"hasDeleteHorizon":'), attrs & 0x40)
        o = write_int(_put(o, b',"lastOffsetDelta":'), _rd(c, pos + 23, 4))
        o = write_int(_put(o, b',"baseTimestamp":'), _rd(c, pos + 27, 8))
        o = write_int(_put(o, b',"maxTimestamp":'), _rd(c, pos + 35, 8))
        o = write_int(_put(o, b',"producerId":'), _rd(c, pos + 43, 8))
        o = write_int(_put(o, b',"producerEpoch":'), _rd(c, pos + 51, 2))
        o = write_int(_put(o, b',"baseSequence":'), _rd(c, pos + 53, 4))
        o = write_int(_put(o, b',"recordCount":'), _rd(c, pos + 57, 4))
        o = _put(o, b',"status":"ok"}')
        pos += LOG_OVERHEAD + length
    o = _put(o, b'],"partial_tail":')
    o = write_int(o, partial)
    o[0] = b'}'
    return o + 1 - buf


ctypedef Py_ssize_t (*_bound_fn)(const unsigned char*, Py_ssize_t) noexcept
ctypedef Py_ssize_t (*_write_fn)(const unsigned char*, Py_ssize_t, char*) noexcept

cdef struct HeadersWriter:
    _bound_fn bound
    _write_fn write

cdef HeadersWriter _writer
_writer.bound = headers_bound
_writer.write = headers_write
#: The two functions above for other typed twins (inspector/native/_body.pyx writes record sets into its
#: own buffer): a capsule of a ``HeadersWriter`` struct, named with its layout's version.
HEADERS_WRITER = PyCapsule_New(<void*>&_writer, HEADERS_WRITER_NAME, NULL)


def headers_json(data):
    """JSON text of the headers-level summary of ``data`` (bytes-like), or None (see the module)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef Py_ssize_t bound, size
    try:
        bound = headers_bound(<const unsigned char*>view.buf, view.len)
        if bound < 0:
            return None
        text = PyBytes_FromStringAndSize(NULL, bound)
        size = headers_write(<const unsigned char*>view.buf, view.len, PyBytes_AS_STRING(text))
        return text[:size]
    finally:
        PyBuffer_Release(&view)
