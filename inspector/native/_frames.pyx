# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Typed twin of the loop of ``inspector.kafka.framing.Framer._whole_frames``: slice the complete frames out of
stream bytes that start at a frame boundary.

``whole_frames(view, max_frame, offset, ts, new_frame, out)`` appends ``new_frame(ts, ts, offset + pos,
frame bytes)`` for each complete frame (4-byte big-endian length in 0..max_frame, then that many bytes)
and returns the position where it stopped (the start of an incomplete or implausible frame, or the end);
the framer decides what follows, as in its pure loop. ``tests/inspector/kafka/test_framing.py`` feeds every
framer with and without the twin.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize


def whole_frames(view, Py_ssize_t max_frame, Py_ssize_t offset, double ts, new_frame, list out):
    cdef Py_buffer buf
    PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)  # (a typed memoryview costs more than a segment's frames)
    cdef Py_ssize_t n = buf.len, pos = 0, end
    cdef long long length
    cdef const unsigned char* c = <const unsigned char*>buf.buf
    try:
        while n - pos >= 4:
            length = <int>((<unsigned int>c[pos] << 24) | (<unsigned int>c[pos + 1] << 16)
                           | (<unsigned int>c[pos + 2] << 8) | <unsigned int>c[pos + 3])
            if length < 0 or length > max_frame:
                break
            end = pos + 4 + length
            if end > n:
                break
            out.append(new_frame(ts, ts, offset + pos,
                                 PyBytes_FromStringAndSize(<const char*>c + pos + 4, length)))
            pos = end
    finally:
        PyBuffer_Release(&buf)
    return pos
