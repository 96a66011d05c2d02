# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The one writer of a decoded body's JSON text: the events' ``body`` column, JSONL and ``show -v``.

:class:`BodyColumn` writes each message's body as compact JSON straight into one growing buffer per batch
(the Arrow column's data, with its offsets), so no bytes object is made per message; record sets are
written by the headers-level writer rendered into ``decoders/native/_records.pyx``, or as the summary dict
the caller's ``default`` makes of them. While writing it collects the non-zero ``ErrorCode`` values of
the text. :meth:`BodyColumn.text` gives one body's text alone (``inspector.rows.event_table.body_json``).

The text: ``dict`` (``str`` keys) as objects, ``list``/``tuple`` as arrays, ``str`` as UTF-8 (``<``, ``>``,
``&`` and non-ASCII as they are; a lone surrogate as its ``\\udXXX`` escape), ``int`` in decimal, ``float``
in its shortest round-trip form (``nan`` and infinities as ``null``), ``bool``/``None``, bytes-likes as
lowercase hex. ``tests/inspector/rows/test_native_body.py`` holds it equal to orjson's, an independent encoder,
on every shape both write.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo, PyObject_GetBuffer, PyBuffer_Release
from cpython.dict cimport PyDict_Next
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, _Py_REFCNT
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_GET_LENGTH
from libc.stdint cimport int32_t, int64_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset

from decoders.native._json cimport write_int, write_string

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    void* PyUnicode_DATA(object o)

import pyarrow


cdef const char* _HEX = b"0123456789abcdef"


cdef enum:
    # The text buffer's first size. Pages are only touched as text is written, so room never written costs
    # nothing; growing does (a copy of what is there into fresh pages): a batch of 8192 rows holds some MB.
    FIRST_TEXT = 8 << 20


# Containers nested deeper than this are refused (a ValueError; the decoders' bodies are far shallower).
cdef enum:
    MAX_DEPTH = 254
# decoders/native/_records.pyx's writer of headers-level record set summaries (HEADERS_WRITER): the layout
# of that name.
ctypedef Py_ssize_t (*_bound_fn)(const unsigned char*, Py_ssize_t) noexcept
ctypedef Py_ssize_t (*_write_fn)(const unsigned char*, Py_ssize_t, char*) noexcept

cdef struct HeadersWriter:
    _bound_fn bound
    _write_fn write

cdef const char* HEADERS_WRITER_NAME = b"decoders.native._records.HeadersWriter.v1"


def float_text(double x):
    """A float's JSON text: Python's shortest round-trip ``repr``, written as orjson writes it (``1e-7``, not
    ``1e-07``; ``0.00001``, not ``1e-05``); NaN and the infinities, which JSON has not, as ``null``."""
    if x != x or x == float("inf") or x == float("-inf"):
        return "null"
    text = repr(x)
    cut = text.find("e-")
    if cut < 0:
        return text
    mantissa, exponent = text[:cut], int(text[cut + 2:])
    if exponent == 5:
        sign = "-" if mantissa.startswith("-") else ""
        return sign + "0.0000" + mantissa.lstrip("-").replace(".", "")
    return f"{mantissa}e-{exponent}"


cdef class _Text:
    """A batch's text, handed over by :meth:`BodyColumn.take`: read-only bytes through the buffer protocol,
    over the column's Arrow buffer, which it keeps alive (as an Arrow buffer made from it keeps it)."""

    cdef object owner
    cdef char* data
    cdef Py_ssize_t size

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.data if self.data != NULL else <char*>b"", self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef enum:
    KEY_SLOTS = 256  # keys remembered, by address (a power of two)
    KEY_TEXT = 48  # the longest remembered key text, quotes and colon included


cdef struct _Key:
    PyObject* key  # a reference held (its address cannot be another string's while it is here), or NULL
    Py_ssize_t size
    bint promoted  # the key is one of ``promoted_keys``
    char text[KEY_TEXT]  # the key as written: '"Name":'


cdef class BodyColumn:
    """One batch of ``body`` values as Arrow buffers (see the module)."""

    # The text: an Arrow buffer from Arrow's memory pool, handed over at take(). The pool keeps the pages of
    # the batches written before: a buffer from malloc was returned to the system when its batch was written,
    # and the next batch's took a page fault per 4 KiB written (a quarter of a million faults per GB of text).
    # Once nothing refers to the text handed over any more (the batch was written and dropped), the next
    # batch writes into the same buffer: a new one from the pool still came with fresh pages to fault in
    # and a copy at each regrowth (some 5% of a read's time).
    cdef object buf
    cdef _Text spare  # the text handed over last, kept to take its buffer back when it is free
    cdef char* data
    cdef Py_ssize_t size, cap
    cdef int64_t* offsets  # n + 1 entries
    cdef unsigned char* nulls  # one byte per row (1 = null)
    cdef Py_ssize_t n, ncap, null_count
    cdef Py_ssize_t max_text  # more text than this in a batch is taken as a list (int32 offsets)
    cdef Py_ssize_t hint  # the text buffer's first size: the last batch's text and an eighth (fewer regrowths)
    cdef object records_type
    cdef HeadersWriter* headers  # writes a record set's headers-level summary (NULL: ask the encoder)
    cdef list codes  # the non-zero ErrorCode values of the body being written
    # Keys as written last time, by the key string's address: bodies from the generated decoders share their
    # keys (the field names, one string each), so most keys are copied, not escaped again.
    cdef _Key* keys
    cdef frozenset promoted_keys
    #: Whether the last body appended by :meth:`append` has a top-level key in ``promoted_keys`` (the events
    #: table reads its promoted columns only then); found while its keys are written.
    cdef readonly bint promoted

    def __cinit__(self, records_type, headers_writer=None, Py_ssize_t max_text=0x7FFFFFFF,
                  frozenset promoted_keys=frozenset()):
        """``records_type``: the lazy record set type (``decoders.records.Records``); ``headers_writer``:
        ``decoders/native/_records.pyx``'s ``HEADERS_WRITER`` when record sets are summarised at the headers
        level, else None;
        ``promoted_keys``: the top-level keys :attr:`promoted` looks for."""
        self.records_type = records_type
        self.promoted_keys = promoted_keys
        self.max_text = min(max_text, 0x7FFFFFFF)
        self.keys = <_Key*>calloc(KEY_SLOTS, sizeof(_Key))
        if self.keys == NULL:
            raise MemoryError()
        self.headers = NULL
        if headers_writer is not None and PyCapsule_IsValid(headers_writer, HEADERS_WRITER_NAME):
            self.headers = <HeadersWriter*>PyCapsule_GetPointer(headers_writer, HEADERS_WRITER_NAME)
        self._reset()

    def __dealloc__(self):
        cdef Py_ssize_t i
        self._reset()
        if self.keys != NULL:
            for i in range(KEY_SLOTS):
                Py_XDECREF(self.keys[i].key)
            free(self.keys)

    cdef void _reset(self) noexcept:
        self.buf = None
        free(self.offsets)
        free(self.nulls)
        self.data = NULL
        self.offsets = NULL
        self.nulls = NULL
        self.size = self.cap = self.n = self.ncap = self.null_count = 0

    def __len__(self):
        return self.n

    cdef int _row(self, bint null) except -1:
        cdef Py_ssize_t cap
        cdef void* p
        if self.n + 2 > self.ncap:
            cap = max(1024, self.ncap * 2)
            p = realloc(self.offsets, cap * sizeof(int64_t))
            if p == NULL:
                raise MemoryError()
            self.offsets = <int64_t*>p
            p = realloc(self.nulls, cap)
            if p == NULL:
                raise MemoryError()
            self.nulls = <unsigned char*>p
            self.ncap = cap
            if self.n == 0:
                self.offsets[0] = 0
        self.nulls[self.n] = null
        self.null_count += null
        self.n += 1
        self.offsets[self.n] = self.size
        return 0

    cdef inline int _reserve(self, Py_ssize_t more) except -1:
        if self.size + more <= self.cap:
            return 0
        return self._grow(max(FIRST_TEXT, self.hint, self.cap * 2, self.size + more))

    cdef int _grow(self, Py_ssize_t cap) except -1:
        cdef _Text spare = self.spare
        if self.buf is None and spare is not None and _Py_REFCNT(<PyObject*>spare) == 2:  # spare's and ours
            self.spare = None  # nothing else refers to the text handed over: its buffer is free again
            self.buf, spare.owner, spare.data, spare.size = spare.owner, None, NULL, 0
            if self.buf.size < cap:
                self.buf.resize(cap)
            cap = self.buf.size
        elif self.buf is None:
            self.buf = pyarrow.allocate_buffer(cap, resizable=True)
        else:
            self.buf.resize(cap)  # the text written so far is kept
        self.data = <char*><uintptr_t>self.buf.address
        self.cap = cap
        return 0

    cdef inline int _put(self, const char* s, Py_ssize_t k) except -1:
        self._reserve(k)
        memcpy(self.data + self.size, s, k)
        self.size += k
        return 0

    cdef inline int _byte(self, char c) except -1:
        if self.size + 1 > self.cap:
            self._reserve(1)
        self.data[self.size] = c
        self.size += 1
        return 0

    cdef int _int(self, long long v) except -1:
        self._reserve(21)
        self.size = write_int(self.data + self.size, v) - self.data
        return 0

    cdef int _str(self, str s) except -1:
        cdef Py_ssize_t k, i
        cdef const unsigned char* p
        if PyUnicode_IS_COMPACT_ASCII(s):  # its UTF-8 is its own data (no call, nothing to raise)
            p = <const unsigned char*>PyUnicode_DATA(s)
            k = PyUnicode_GET_LENGTH(s)
        else:
            try:
                p = <const unsigned char*>PyUnicode_AsUTF8AndSize(s, &k)
            except UnicodeError:  # a lone surrogate: written as its escape, visible
                text = s.encode("utf-8", "backslashreplace")
                return self._utf8(<const unsigned char*>PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))
        return self._utf8(p, k)

    cdef inline int _utf8(self, const unsigned char* p, Py_ssize_t k) except -1:
        """Write the string whose UTF-8 is ``p[:k]``, quoted and escaped."""
        self._reserve(k * 6 + 2)  # at most \u00XX per byte
        self.size = write_string(self.data + self.size, p, k, False) - self.data
        return 0

    cdef int _ascii(self, str text) except -1:
        """Write ASCII text as it is (a number's digits)."""
        cdef bytes raw = text.encode("ascii")
        return self._put(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))

    cdef int _hex(self, object value) except -1:
        cdef Py_buffer view
        try:
            PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        except BufferError:  # a memoryview that is not contiguous: its bytes
            return self._hex(bytes(value))
        cdef Py_ssize_t i, k = view.len
        cdef const unsigned char* p = <const unsigned char*>view.buf
        cdef char* o
        try:
            self._reserve(2 * k + 2)
            o = self.data + self.size
            o[0] = b'"'
            o += 1
            for i in range(k):
                o[0] = _HEX[p[i] >> 4]
                o[1] = _HEX[p[i] & 15]
                o += 2
            o[0] = b'"'
            self.size = o + 1 - self.data
        finally:
            PyBuffer_Release(&view)
        return 0

    cdef bint _headers(self, object data) except -1:
        """Write a record set's headers-level summary (``decoders/native/_records.pyx``'s text); False if it leaves it."""
        cdef Py_buffer view
        cdef Py_ssize_t bound
        try:
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        except BufferError:
            return False
        try:
            bound = self.headers.bound(<const unsigned char*>view.buf, view.len)
            if bound < 0:
                return False
            self._reserve(bound)
            self.size += self.headers.write(<const unsigned char*>view.buf, view.len, self.data + self.size)
            return True  # fixed keys, no ErrorCode among them
        finally:
            PyBuffer_Release(&view)

    cdef inline int _code(self, long long v) except -1:
        if self.codes is None:
            self.codes = []
        self.codes.append(v)
        return 0

    cdef long long _integer(self, object v, bint code) except? -1:
        """Write an ``int``; its value. Beyond 64 bits it is written in full and 0 is returned; when it is an
        ``ErrorCode`` (``code``) it is collected here, as the Python int it is."""
        cdef int overflow
        cdef long long x = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow:
            self._ascii(str(int(v)))
            if code:
                if self.codes is None:
                    self.codes = []
                self.codes.append(int(v))
            return 0
        self._int(x)
        return x

    cdef int _value(self, object v, object default, int depth) except -1:
        cdef type t = type(v)
        if t is str:
            return self._str(<str>v)
        if t is dict:
            return self._dict(<dict>v, default, depth)
        if t is int:
            self._integer(v, False)
            return 0
        if v is None:
            return self._put(b"null", 4)
        if t is bool:
            return self._put(b"true", 4) if v else self._put(b"false", 5)
        if t is float:
            return self._ascii(float_text(v))
        cdef bint first = True
        if t is list or t is tuple:
            if depth >= MAX_DEPTH:
                raise ValueError(f"body nested deeper than {MAX_DEPTH} levels")
            self._byte(b'[')
            for item in v:
                if not first:
                    self._byte(b',')
                first = False
                self._value(item, default, depth + 1)
            return self._byte(b']')
        if t is self.records_type:
            if self.headers != NULL and self._headers(v._data):  # the record set's bytes (its slot: no property call)
                return 0
            if default is None:
                raise TypeError("a record set, and no default to summarise it")
            result = default(v)  # the caller's summary of the record set
            if type(result) is not dict:
                raise TypeError(f"the summary of a record set is a {type(result).__name__}, not a dict")
            return self._value(result, default, depth + 1)
        if t is bytes or t is bytearray or t is memoryview:
            return self._hex(v)
        return self._other(v, default, depth)

    cdef int _other(self, object v, object default, int depth) except -1:
        """Write a value of a subclass of the types :meth:`_value` knows, as that type."""
        if isinstance(v, str):
            return self._str(str(v))
        if isinstance(v, int):
            self._integer(int(v), False)
            return 0
        if isinstance(v, float):
            return self._ascii(float_text(v))
        if isinstance(v, dict):
            return self._value(dict(v), default, depth)
        if isinstance(v, (list, tuple)):
            return self._value(list(v), default, depth)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return self._hex(bytes(v))
        raise TypeError(f"cannot write a {type(v).__name__} as JSON")

    cdef inline int _key(self, PyObject* key, int depth) except -1:
        """Write a (str) key and its colon: copied when this key string was written before. A top-level key
        (``depth`` 0) in ``promoted_keys`` sets :attr:`promoted`."""
        cdef _Key* slot = &self.keys[(<size_t>key >> 4) & (KEY_SLOTS - 1)]
        cdef Py_ssize_t start
        cdef bint promoted
        if slot.key == key:
            self._reserve(slot.size)
            memcpy(self.data + self.size, slot.text, slot.size)
            self.size += slot.size
            if depth == 0 and slot.promoted:
                self.promoted = True
            return 0
        start = self.size
        self._str(<str>key)
        self._byte(b':')
        promoted = <object>key in self.promoted_keys
        if depth == 0 and promoted:
            self.promoted = True
        if self.size - start <= KEY_TEXT:
            Py_XDECREF(slot.key)
            Py_INCREF(<object>key)
            slot.key = key
            slot.size = self.size - start
            slot.promoted = promoted
            memcpy(slot.text, self.data + start, slot.size)
        return 0

    cdef int _dict(self, dict d, object default, int depth) except -1:
        cdef PyObject* key
        cdef PyObject* value
        cdef Py_ssize_t pos = 0
        cdef bint first = True
        cdef long long x
        if depth >= MAX_DEPTH:
            raise ValueError(f"body nested deeper than {MAX_DEPTH} levels")
        self._byte(b'{')
        while PyDict_Next(d, &pos, &key, &value):
            if type(<object>key) is not str:
                raise TypeError(f"a dict key is a {type(<object>key).__name__}, not a str")
            if not first:
                self._byte(b',')
            first = False
            self._key(key, depth)
            if type(<object>value) is int and <str>key == "ErrorCode":
                x = self._integer(<object>value, True)
                if x:
                    self._code(x)
            else:
                self._value(<object>value, default, depth + 1)
        return self._byte(b'}')

    def append(self, body, default):
        """Append ``body``'s JSON (None: a null); return the non-zero ErrorCode values of its text in order
        (None when there are none). ``default`` summarises a record set the headers writer leaves (a dict)."""
        self.promoted = False
        if body is None:
            self._row(True)
            return None
        cdef Py_ssize_t start = self.size
        self.codes = None
        try:
            self._value(body, default, 0)
        except BaseException:
            self.size = start
            self.codes = None
            raise
        self._row(False)
        codes, self.codes = self.codes, None
        return codes

    def append_text(self, bytes text not None):
        """Append JSON text made elsewhere (a Produce or Fetch body the compiled decoders wrote from the frame)."""
        self._put(PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))
        self._row(False)

    def text(self, body, default):
        """``body``'s JSON text alone (UTF-8 bytes; None for None), as :meth:`append` writes it; nothing stays
        appended."""
        if body is None:
            return None
        self.append(body, default)
        cdef Py_ssize_t start = self.offsets[self.n - 1]
        written = PyBytes_FromStringAndSize(self.data + start, self.size - start)
        self.drop_last()
        return written

    def drop_last(self):
        """Remove the last value appended (its row was not added after all)."""
        if self.n:
            self.n -= 1
            self.null_count -= self.nulls[self.n]
            self.size = self.offsets[self.n]

    def take(self):
        """The batch as ``(validity, offsets, data, null_count)`` for ``pyarrow.Array.from_buffers`` (int32
        offsets; ``data`` a read-only buffer-protocol object owning the text), or as a list of values (bytes or None) when it holds more text than that (over 2 GiB); then
        empty."""
        cdef Py_ssize_t n = self.n, i
        cdef int32_t* off
        cdef unsigned char* valid
        self.hint = self.size + (self.size >> 3)
        try:
            if self.size > self.max_text:
                return [None if self.nulls[i] else
                        PyBytes_FromStringAndSize(self.data + self.offsets[i], self.offsets[i + 1] - self.offsets[i])
                        for i in range(n)]
            data = _Text.__new__(_Text)  # the buffer itself, handed over (no copy of the batch's text)
            (<_Text>data).owner, (<_Text>data).data, (<_Text>data).size = self.buf, self.data, self.size
            self.spare = data if self.buf is not None else None  # a batch of null bodies owns no buffer
            offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4)
            off = <int32_t*>PyBytes_AS_STRING(offsets)
            off[0] = 0
            for i in range(n):
                off[i + 1] = <int32_t>self.offsets[i + 1]
            validity = None
            if self.null_count:
                validity = PyBytes_FromStringAndSize(NULL, (n + 7) >> 3)
                valid = <unsigned char*>PyBytes_AS_STRING(validity)
                memset(valid, 0xFF, (n + 7) >> 3)
                for i in range(n):
                    if self.nulls[i]:
                        valid[i >> 3] &= ~(1 << (i & 7))
            return validity, offsets, data, self.null_count
        finally:
            self._reset()

