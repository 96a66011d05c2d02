# Where a compiled reader (decoders/accel/*.pyx, generated) stopped: the path of the field it was reading, kept
# on the C stack as the readers call one another, and the failure it notes there (decoders/accel/_where.pyx).
# cython: language_level=3

from decoders.element_budget cimport ElementBudget

cdef struct Where:
    Where* up  # the caller's field, or NULL at the reader called from Python
    const char* name  # this frame's field ("Topics", "Partitions[{}].ErrorCode"), or NULL: none
    Py_ssize_t index  # the array element being read (put at "{}", else appended as "[i]"), or -1

# What failed (decoders._runtime names each failure's status text).
cdef enum Failure:
    TRUNCATED  # a read past the end: "truncated"
    SHORT  # a length past the end
    SHORT_COUNT  # an array count whose smallest elements cannot fit
    TOO_MANY  # an array count of elements that can be empty, over the bound
    NEGATIVE  # a negative length other than -1 (null)
    OVER_BUDGET  # an array count past the message's element budget
    LONG_VARINT  # an unsigned varint of more than 5 bytes
    RAISED  # a DecodeError raised by the runtime's helpers (tagged fields, record sets), kept whole

cdef void note(Failure what, long long n, Py_ssize_t p, Py_ssize_t L, Where* up, const char* name,
               Py_ssize_t index) noexcept
cdef object failed(Failure what, long long n, Py_ssize_t p, Py_ssize_t L, Where* up, const char* name,
                   Py_ssize_t index)
cdef int raise_failure() except -1
cdef Py_ssize_t tags_at(bytes b, Py_ssize_t p, long long t, dict table, dict out, ElementBudget B, Where* up,
                        const char* name, Py_ssize_t index) except -2
cdef object records_at(bytes b, Py_ssize_t p, long long n, ElementBudget B, Where* up, const char* name,
                       Py_ssize_t index)
