# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Typed twin of turning event rows into Arrow column buffers (``inspector.rows.event_table.EventTable.take``).

``columns(rows, kinds)`` transposes a list of equal-length tuples into one set of Arrow buffers per
column in one pass, instead of building a Python list per column and converting it value by value.
``kinds`` has one letter per column: ``q`` int64, ``i`` int32, ``h`` int16, ``d`` float64 (exact
``int``/``float`` values or None), ``t`` int64 microseconds from ``float`` seconds (``round(v * 1_000_000)``:
half to even), ``s`` UTF-8 from ``str``, ``b`` UTF-8 from ``bytes``; ``-`` skips a
column (built elsewhere: None in its place). Each column
comes back as ``(validity, offsets, data, null_count)`` (validity None without nulls, offsets None
for fixed-width columns), ready for ``pyarrow.Array.from_buffers``. For anything else (another type,
an integer out of range, over 2 GiB of text in one column) it returns None and the caller converts
with ``pyarrow.array``, which decides. ``tests/inspector/rows/test_events.py`` holds both to equal batches.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_GET_LENGTH

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    void* PyUnicode_DATA(object o)
from libc.math cimport rint
from libc.string cimport memcpy, memset
from libc.stdint cimport int16_t, int32_t, int64_t


class _Unhandled(Exception):
    pass


cdef inline int _width(char kind) noexcept:
    if kind == b'q' or kind == b'd' or kind == b't':
        return 8
    if kind == b'i':
        return 4
    if kind == b'h':
        return 2
    return 0


cdef inline const char* _utf8(object v, Py_ssize_t* size) except NULL:
    """A str's UTF-8: an ASCII string's own data (no call), else Python's cached encoding (raises on a lone
    surrogate)."""
    if PyUnicode_IS_COMPACT_ASCII(v):
        size[0] = PyUnicode_GET_LENGTH(v)
        return <const char*>PyUnicode_DATA(v)
    return PyUnicode_AsUTF8AndSize(v, size)


cdef object _text(list rows, Py_ssize_t col, bint from_str, char* valid, Py_ssize_t* nulls):
    """(offsets, data) of a text column; marks nulls in ``valid``."""
    cdef Py_ssize_t n = len(rows), i, total = 0, size
    cdef const char* p
    cdef object v
    for i in range(n):
        v = (<tuple>rows[i])[col]
        if v is None:
            continue
        if from_str:
            if not isinstance(v, str):  # a str, or a str enum's member (contract.events.Direction)
                raise _Unhandled()
            _utf8(v, &size)
        else:
            if type(v) is not bytes:
                raise _Unhandled()
            size = PyBytes_GET_SIZE(v)
        total += size
    if total > 0x7FFFFFFF:
        raise _Unhandled()
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4)
    data = PyBytes_FromStringAndSize(NULL, total)
    cdef int32_t* off = <int32_t*>PyBytes_AS_STRING(offsets)
    cdef char* out = PyBytes_AS_STRING(data)
    cdef Py_ssize_t at = 0
    off[0] = 0
    for i in range(n):
        v = (<tuple>rows[i])[col]
        if v is None:
            valid[i >> 3] &= ~(1 << (i & 7))
            nulls[0] += 1
        else:
            if from_str:
                p = _utf8(v, &size)
            else:
                p = PyBytes_AS_STRING(v)
                size = PyBytes_GET_SIZE(v)
            memcpy(out + at, p, size)
            at += size
        off[i + 1] = <int32_t>at
    return offsets, data


cdef object _fixed(list rows, Py_ssize_t col, char kind, char* valid, Py_ssize_t* nulls):
    cdef Py_ssize_t n = len(rows), i
    cdef int width = _width(kind)
    data = PyBytes_FromStringAndSize(NULL, n * width)
    cdef char* out = PyBytes_AS_STRING(data)
    cdef object v
    cdef long long x
    cdef double r
    memset(out, 0, n * width)
    for i in range(n):
        v = (<tuple>rows[i])[col]
        if v is None:
            valid[i >> 3] &= ~(1 << (i & 7))
            nulls[0] += 1
            continue
        if kind == b'd':
            if type(v) is not float:
                raise _Unhandled()
            (<double*>out)[i] = PyFloat_AS_DOUBLE(v)
            continue
        if kind == b't':
            if type(v) is not float:
                raise _Unhandled()
            r = rint(PyFloat_AS_DOUBLE(v) * 1000000.0)  # Python's round(): half to even (the default mode)
            if not (-9223372036854775808.0 <= r < 9223372036854775808.0):  # NaN fails too
                raise _Unhandled()
            (<int64_t*>out)[i] = <int64_t>r
            continue
        if type(v) is not int:
            raise _Unhandled()
        x = PyLong_AsLongLong(v)  # OverflowError beyond 64 bits: the caller converts instead
        if kind == b'q':
            (<int64_t*>out)[i] = x
        elif kind == b'i':
            if x < -0x80000000 or x > 0x7FFFFFFF:
                raise _Unhandled()
            (<int32_t*>out)[i] = <int32_t>x
        else:
            if x < -0x8000 or x > 0x7FFF:
                raise _Unhandled()
            (<int16_t*>out)[i] = <int16_t>x
    return data


def columns(list rows, bytes kinds):
    """Arrow buffers of each column of ``rows`` (see the module), or None."""
    cdef Py_ssize_t n = len(rows), ncols = len(kinds), c, i, nulls
    cdef const char* k = kinds
    cdef Py_ssize_t vbytes = (n + 7) >> 3
    for i in range(n):
        if type(rows[i]) is not tuple or len(<tuple>rows[i]) != ncols:
            return None
    out = []
    try:
        for c in range(ncols):
            if k[c] == b'-':
                out.append(None)
                continue
            validity = PyBytes_FromStringAndSize(NULL, vbytes)
            memset(PyBytes_AS_STRING(validity), 0xFF, vbytes)
            nulls = 0
            if k[c] == b's' or k[c] == b'b':
                offsets, data = _text(rows, c, k[c] == b's', PyBytes_AS_STRING(validity), &nulls)
            elif _width(k[c]):
                offsets = None
                data = _fixed(rows, c, k[c], PyBytes_AS_STRING(validity), &nulls)
            else:
                return None
            out.append((validity if nulls else None, offsets, data, nulls))
    except (_Unhandled, OverflowError, UnicodeError):
        return None
    return out
