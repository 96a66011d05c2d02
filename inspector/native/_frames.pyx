# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The one loop that slices Kafka frames out of stream bytes (``inspector.kafka.framing.Framer`` calls it for a
segment that starts at a frame boundary with nothing buffered, and for its buffered pieces once a frame is
complete in them).

``whole_frames(chunks, max_frame, offset, first_ts, ts, new_frame, out)`` reads ``chunks`` (bytes or
memoryviews, in stream order, starting at a frame boundary at stream offset ``offset``) as one run of bytes and
appends ``new_frame(ts, first_ts, offset + pos, frame bytes)`` for each complete frame (4-byte big-endian
length in 0..max_frame, then that many bytes; ``first_ts`` is the first frame's, the later ones start at
``ts``). Each frame's bytes are copied once, from however many chunks hold them. It returns the position
where it stopped (the start of an incomplete or implausible frame, or the end); the framer decides what
follows. ``tests/inspector/kafka/test_framing.py`` holds it to the definition, however the bytes are cut.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy


cdef struct Cursor:
    Py_buffer* bufs  # the chunks' buffers
    Py_ssize_t chunk  # the chunk being read
    Py_ssize_t at  # the position in it


cdef void _copy(Cursor* cur, char* dst, Py_ssize_t k, bint advance) noexcept:
    """Copy the next ``k`` bytes (they are there) to ``dst``; move past them when ``advance``."""
    cdef Py_ssize_t chunk = cur.chunk, at = cur.at, take
    while k:
        take = cur.bufs[chunk].len - at
        if take == 0:
            chunk += 1
            at = 0
            continue
        if take > k:
            take = k
        memcpy(dst, <const char*>cur.bufs[chunk].buf + at, take)
        dst += take
        at += take
        k -= take
    if advance:
        cur.chunk = chunk
        cur.at = at


def whole_frames(list chunks, Py_ssize_t max_frame, Py_ssize_t offset, object first_ts, object ts, new_frame,
                 list out):
    cdef Py_ssize_t count = len(chunks), held = 0, total = 0, pos = 0, i
    cdef long long length
    cdef unsigned char head[4]
    cdef Cursor cur
    cdef Py_buffer few[4]  # a segment's view, or a few buffered pieces: no allocation
    cdef object data
    cdef const char* one
    if count <= 4:
        cur.bufs = &few[0]
    else:
        cur.bufs = <Py_buffer*>malloc(count * sizeof(Py_buffer))
    if cur.bufs == NULL:
        raise MemoryError()
    cur.chunk = cur.at = 0
    try:
        for i in range(count):  # (a typed memoryview costs more than a segment's frames)
            PyObject_GetBuffer(chunks[i], &cur.bufs[i], PyBUF_SIMPLE)
            held += 1
            total += cur.bufs[i].len
        while total - pos >= 4:
            _copy(&cur, <char*>head, 4, False)
            length = <int>((<unsigned int>head[0] << 24) | (<unsigned int>head[1] << 16)
                           | (<unsigned int>head[2] << 8) | <unsigned int>head[3])
            if length < 0 or length > max_frame or total - pos - 4 < length:
                break
            _copy(&cur, <char*>head, 4, True)
            if cur.bufs[cur.chunk].len - cur.at >= length:  # within one chunk: copied straight from it
                one = <const char*>cur.bufs[cur.chunk].buf + cur.at
                data = PyBytes_FromStringAndSize(one, length)
                cur.at += length
            else:
                data = PyBytes_FromStringAndSize(NULL, length)
                _copy(&cur, PyBytes_AS_STRING(data), length, True)
            out.append(new_frame(ts, first_ts, offset + pos, data))
            first_ts = ts
            pos += 4 + length
    finally:
        for i in range(held):
            PyBuffer_Release(&cur.bufs[i])
        if cur.bufs != &few[0]:
            free(cur.bufs)
    return pos
