"""The failure of a compiled reader (decoders/accel/*.pyx, generated): the :class:`decoders._runtime.DecodeError`
the plain reader of the same layout would raise, with the same status text, field path and byte offset, so that
a frame is decoded once, failing or not.

Each reader is given its caller's field (a :c:type:`Where` on the C stack: nothing is built unless a read fails).
A reader that fails notes what failed and the chain of fields it was reading (``note``: C values only) and
returns :data:`FAILED`; each reader that called it returns :data:`FAILED` in turn, nothing raised on the way.
The entry point called from Python then raises the DecodeError (``raise_failure``), or, for an embedded
structure, whose caller only wants its status, returns ``None`` and the caller reads the status
(``last_failure``). Only this module builds a path or a text, and only on failure.

One failure is noted at a time, for the whole process: between a reader noting it and its entry point reading it
only compiled code runs (the readers returning, the entry point, ``decoders.embedded``'s compiled
``decode_versioned``), never the interpreter's loop, so no other thread's decode can come between.
"""
# cython: language_level=3

from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdio cimport snprintf
from libc.string cimport strstr

from decoders import _runtime as _rt
from decoders.status import StatusKind

#: What a compiled reader returns when it failed (its failure noted here).
FAILED = object()
cdef object _FAILED = FAILED

cdef enum:
    MAX_DEPTH = 32  # the deepest field path noted; the readers nest a few levels (tests/decoders/test_accel.py)
#: The deepest field path a failure notes.
MAX_PATH = MAX_DEPTH


# The failure noted last: what failed, the length or count read, the offset and the bytes' end, and the field path
# innermost first (the names are the generated modules' string constants). Read by the entry point the reader
# returned to, before any other read can run.
cdef struct Noted:
    Failure what
    long long n
    Py_ssize_t p
    Py_ssize_t L
    int depth
    const char* names[MAX_DEPTH]
    Py_ssize_t indexes[MAX_DEPTH]


cdef Noted _noted
_noted.depth = 0
# The DecodeError of a RAISED failure, its path complete.
cdef object _raised = None


cdef void note(Failure what, long long n, Py_ssize_t p, Py_ssize_t L, Where* up, const char* name,
               Py_ssize_t index) noexcept:
    """Note the failure ``what`` (``n``: the length or count read) of the field ``name`` at offset ``p``."""
    cdef int depth = 0
    _noted.what = what
    _noted.n = n
    _noted.p = p
    _noted.L = L
    if name != NULL:
        _noted.names[0] = name
        _noted.indexes[0] = index
        depth = 1
    while up != NULL and depth < MAX_DEPTH:
        if up.name != NULL:
            _noted.names[depth] = up.name
            _noted.indexes[depth] = up.index
            depth += 1
        up = up.up
    _noted.depth = depth


cdef object failed(Failure what, long long n, Py_ssize_t p, Py_ssize_t L, Where* up, const char* name,
                   Py_ssize_t index):
    """:func:`note`, then :data:`FAILED`: a reader's ``return failed(...)``."""
    note(what, n, p, L, up, name, index)
    return _FAILED


cdef enum:
    WHERE_SIZE = 512  # the longest field path written in one buffer; a longer one is joined in Python


cdef int _write_segment(char* out, Py_ssize_t size, const char* dot, const char* name, Py_ssize_t index) noexcept:
    """Write ``dot`` and one field of a path at ``out`` (``size`` bytes there): ``name`` (ASCII) with the element
    index put at its ``{}``, or appended as ``[i]``. Returns what ``snprintf`` returns (``size`` or more: cut)."""
    cdef const char* mark
    if index < 0:
        return snprintf(out, size, "%s%s", dot, name)
    mark = strstr(name, "{}")
    if mark != NULL:
        return snprintf(out, size, "%s%.*s%zd%s", dot, <int>(mark - name), name, index, mark + 2)
    return snprintf(out, size, "%s%s[%zd]", dot, name, index)


cdef str _segment(const char* name, Py_ssize_t index):
    """One field of a path (:func:`_write_segment`) as text."""
    cdef char text[WHERE_SIZE]
    cdef int wrote = _write_segment(text, WHERE_SIZE, "", name, index)
    if wrote < 0 or wrote >= WHERE_SIZE:  # a generated field name is far shorter
        raise ValueError(f"field name too long for a path: {name.decode('ascii', 'replace')!r}")
    return PyUnicode_DecodeASCII(text, wrote, NULL)


cdef list _noted_path():
    """The noted failure's field path, outermost first."""
    cdef int i
    return [_segment(_noted.names[i], _noted.indexes[i]) for i in range(_noted.depth - 1, -1, -1)]


cdef str _noted_where():
    """The noted failure's field path as its status names it (``_runtime.path_text`` of :func:`_noted_path`),
    written in one buffer."""
    cdef char text[WHERE_SIZE]
    cdef Py_ssize_t used = 0
    cdef int i, wrote
    if _noted.depth == 0:
        return _path_text([])
    for i in range(_noted.depth - 1, -1, -1):
        wrote = _write_segment(text + used, WHERE_SIZE - used, "." if used else "", _noted.names[i],
                               _noted.indexes[i])
        if wrote < 0 or wrote >= WHERE_SIZE - used:
            return _path_text(_noted_path())
        used += wrote
    return PyUnicode_DecodeASCII(text, used, NULL)


# decoders._runtime's reasons, looked up once.
cdef object _TRUNCATED_REASON = _rt.TRUNCATED_REASON
cdef object _LONG_VARINT_REASON = _rt.LONG_VARINT_REASON
cdef object _short_reason = _rt.short_reason
cdef object _short_count_reason = _rt.short_count_reason
cdef object _too_many_reason = _rt.too_many_reason
cdef object _negative_reason = _rt.negative_reason
cdef object _over_budget_reason = _rt.over_budget_reason
cdef object _describe_at = _rt.describe_at
cdef object _path_text = _rt.path_text
cdef object _LIMIT = StatusKind.LIMIT


cdef tuple _reason():
    """The noted failure's status kind and reason text (decoders._runtime's)."""
    cdef Failure what = _noted.what
    if what == TRUNCATED:
        return _TRUNCATED_REASON
    if what == SHORT:
        return _short_reason(_noted.n, _noted.L - _noted.p)
    if what == SHORT_COUNT:
        return _short_count_reason(_noted.n, _noted.L - _noted.p)
    if what == TOO_MANY:
        return _too_many_reason(_noted.n)
    if what == NEGATIVE:
        return _negative_reason(_noted.n)
    if what == OVER_BUDGET:
        return _over_budget_reason(_noted.n)
    return _LONG_VARINT_REASON


cdef object _take_raised():
    """The DecodeError of a RAISED failure, no longer kept (it holds the frame's bytes through its traceback)."""
    global _raised
    err = _raised
    _raised = None
    return err


cdef int raise_failure() except -1:
    """Raise the noted failure as the DecodeError the plain reader raises."""
    if _noted.what == RAISED:
        raise _take_raised()
    kind, reason = _reason()
    err = _rt.DecodeError(kind, reason, _noted.p)
    err.path = _noted_path()
    raise err


def last_failure():
    """The noted failure, as a decode's status wants it: ``(status text, whether it stopped at the element
    budget)`` (``DecodeError.describe()`` and ``_runtime.spent_budget`` of the DecodeError it stands for)."""
    if _noted.what == RAISED:
        err = _take_raised()
        return err.describe(), _rt.spent_budget(err)
    kind, reason = _reason()
    return _describe_at(reason, _noted_where(), _noted.p), kind is _LIMIT


cdef int _note_raised(Exception exc, Py_ssize_t p, Where* up, const char* name, Py_ssize_t index) except -1:
    """Note ``exc``, raised by a runtime helper reading at ``p``, located as the plain reader locates it."""
    global _raised
    note(RAISED, 0, p, 0, up, name, index)  # the fields the helper was called for
    err = _rt.located(exc, p)
    err.path[0:0] = _noted_path()
    _raised = err
    return 0


cdef Py_ssize_t tags_at(bytes b, Py_ssize_t p, long long t, dict table, dict out, ElementBudget B, Where* up,
                        const char* name, Py_ssize_t index) except -2:
    """``_rt.tags`` (the ``t`` tagged fields at ``p``), or -1: its failure noted."""
    try:
        return _rt.tags(b, p, t, table, out, B)
    except Exception as exc:
        _note_raised(exc, p, up, name, index)
        return -1


cdef object records_at(bytes b, Py_ssize_t p, long long n, ElementBudget B, Where* up, const char* name,
                       Py_ssize_t index):
    """``_rt.records`` (the record set of ``n`` bytes at ``p``), or :data:`FAILED`: its failure noted."""
    try:
        return _rt.records(b, p, n, B)
    except Exception as exc:
        _note_raised(exc, p, up, name, index)
        return _FAILED
