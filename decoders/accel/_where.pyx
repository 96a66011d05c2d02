"""The failure of a compiled reader (decoders/accel/*.pyx, generated): the :class:`decoders._runtime.DecodeError`
the plain reader of the same layout would raise, with the same status text, field path and byte offset, so that
a frame is decoded once, failing or not.

Each reader is given its caller's field (a :c:type:`Where` on the C stack: nothing is built unless a read fails);
a failure walks that chain to name the field path. Only this module builds a path, and only on failure.
"""
# cython: language_level=3

from decoders import _runtime as _rt
from decoders.status import StatusKind


cdef str _segment(const char* name, Py_ssize_t index):
    """One field of a path: ``name`` with the element index put at its ``{}``, or appended as ``[i]``."""
    cdef str text = name.decode("ascii")
    if index < 0:
        return text
    if "{}" in text:
        return text.replace("{}", str(index), 1)
    return f"{text}[{index}]"


cdef list _path(Where* up, const char* name, Py_ssize_t index):
    """The field path, outermost first: the callers' fields, then this frame's."""
    cdef list path = []
    if name != NULL:
        path.append(_segment(name, index))
    while up != NULL:
        if up.name != NULL:
            path.append(_segment(up.name, up.index))
        up = up.up
    path.reverse()
    return path


cdef int fail(Failure what, long long n, Py_ssize_t p, Py_ssize_t L, Where* up, const char* name,
              Py_ssize_t index) except -1:
    """Raise the failure ``what`` (``n``: the length or count read) of the field ``name`` at offset ``p``."""
    if what == TRUNCATED:
        err = _rt.DecodeError(StatusKind.TRUNCATED, "truncated", p)
    elif what == SHORT:
        err = _rt.short(n, L - p)
    elif what == SHORT_COUNT:
        err = _rt.short_count(n, L - p)
    elif what == TOO_MANY:
        err = _rt.too_many(n)
    elif what == NEGATIVE:
        err = _rt.negative(n)
    elif what == OVER_BUDGET:
        err = _rt.over_budget(n)
    else:
        err = _rt.long_varint(p)
    err.offset = p
    err.path = _path(up, name, index)
    raise err


cdef Py_ssize_t tags_at(bytes b, Py_ssize_t p, long long t, dict table, dict out, ElementBudget B, Where* up,
                        const char* name, Py_ssize_t index) except -1:
    """``_rt.tags`` (the ``t`` tagged fields at ``p``), a failure located as the plain reader locates it."""
    try:
        return _rt.tags(b, p, t, table, out, B)
    except Exception as exc:
        err = _rt.located(exc, p)
        err.path[0:0] = _path(up, name, index)
        raise err from None


cdef object records_at(bytes b, Py_ssize_t p, long long n, ElementBudget B, Where* up, const char* name,
                       Py_ssize_t index):
    """``_rt.records`` (the record set of ``n`` bytes at ``p``), a failure located as the plain reader locates it."""
    try:
        return _rt.records(b, p, n, B)
    except Exception as exc:
        err = _rt.located(exc, p)
        err.path[0:0] = _path(up, name, index)
        raise err from None
