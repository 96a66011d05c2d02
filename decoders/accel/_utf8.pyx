"""A string field's text for the compiled readers: ``bytes.decode("utf-8", "backslashreplace")``, which the plain
readers call, without Python's error handler.

Python's UTF-8 decoder hands each invalid sequence to the named error handler through an exception object
(docs/performance.md), except for the handlers it knows itself: ``surrogateescape`` writes each byte of the same
invalid sequence as the lone surrogate U+DC00 + byte, in C. Text decoded from valid UTF-8 never holds a lone
surrogate (the decoder refuses encoded surrogates), so each one here stands for one byte the plain reader writes
as ``\\xNN``: written so, the text is the plain reader's (tests/decoders/test_utf8.py compares them).
"""
# cython: language_level=3

from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "Python.h":
    int PyUnicode_KIND(object o)
    int PyUnicode_1BYTE_KIND
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)

# Each byte as backslashreplace writes it.
cdef list _ESCAPES = [f"\\x{byte:02x}" for byte in range(256)]


cdef str utf8_text(const char* s, Py_ssize_t n):
    """The ``n`` bytes at ``s`` decoded as UTF-8, each byte of an invalid sequence written ``\\xNN``."""
    cdef str text = PyUnicode_DecodeUTF8(s, n, "surrogateescape")
    if PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND:  # no code point above U+00FF, so no surrogate
        return text
    return _escaped(text)


cdef str _escaped(str text):
    """``text`` with each lone surrogate U+DC00 + byte written as that byte's ``\\xNN``."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t size = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t i, start = 0
    cdef unsigned int ch
    cdef list pieces = None
    for i in range(size):
        ch = <unsigned int>PyUnicode_READ(kind, data, i)
        if 0xDC00 <= ch <= 0xDCFF:
            if pieces is None:
                pieces = []
            pieces.append(text[start:i])
            pieces.append(_ESCAPES[<Py_ssize_t>(ch - 0xDC00)])
            start = i + 1
    if pieces is None:
        return text
    pieces.append(text[start:])
    return "".join(pieces)


def decode(bytes raw) -> str:
    """:c:func:`utf8_text` of ``raw`` (for the tests)."""
    return utf8_text(raw, len(raw))
