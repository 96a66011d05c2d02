# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Typed twin of calling a plain slotted dataclass: ``Maker(cls, names)(*values)``.

The hot path makes several small dataclass objects per packet (segments, stream data, frames,
messages). Their generated ``__init__`` only stores each argument in its slot, but runs as
interpreted Python (dataclasses and ``fast_frozen_init`` write it with ``exec``). A maker does the
same stores from C: it allocates the instance with the type's own allocator and puts each value in
the slot its member descriptor names, exactly what ``object.__setattr__`` would store (a frozen
class stays frozen). It takes every field, positionally, in ``names`` order, and only accepts
classes whose fields are all plain object slots (``decoders.native.maker`` checks the rest:
a dataclass without ``__post_init__``, defaults, factories or other slots).
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    ctypedef struct PyTypeObject:
        PyObject* (*tp_alloc)(PyTypeObject*, Py_ssize_t)

cdef extern from "structmember.h":
    int T_OBJECT_EX

MemberDescriptor = type(type("_Probe", (), {"__slots__": ("x",)}).__dict__["x"])

cdef enum:
    MAX_FIELDS = 32


cdef class Maker:
    cdef PyTypeObject* tp
    cdef object cls  # keeps the type alive
    cdef Py_ssize_t n
    cdef Py_ssize_t offsets[MAX_FIELDS]

    def __init__(self, cls, names):
        cdef PyMemberDef* member
        if not isinstance(cls, type) or len(names) > MAX_FIELDS:
            raise TypeError("a class with at most 32 fields")
        self.cls = cls
        self.tp = <PyTypeObject*>cls
        self.n = len(names)
        for i, name in enumerate(names):
            descriptor = cls.__dict__.get(name)
            if type(descriptor) is not MemberDescriptor:
                raise TypeError(f"{cls.__name__}.{name} is not a slot of the class itself")
            member = (<PyMemberDescrObject*><PyObject*>descriptor).d_member
            if member.type != T_OBJECT_EX:
                raise TypeError(f"{cls.__name__}.{name} is not an object slot")
            self.offsets[i] = member.offset

    def __call__(self, *values):
        cdef Py_ssize_t i
        cdef PyObject* v
        cdef PyObject* raw
        if len(values) != self.n:
            raise TypeError(f"{self.cls.__name__} takes {self.n} values, {len(values)} given")
        raw = self.tp.tp_alloc(self.tp, 0)  # a new, zeroed instance; the stores below fill every slot
        if raw == NULL:
            raise MemoryError()
        obj = <object>raw
        Py_DECREF(obj)  # the cast took a second reference: obj owns the one tp_alloc returned
        for i in range(self.n):
            v = <PyObject*>values[i]
            Py_INCREF(<object>v)
            (<PyObject**>((<char*>raw) + self.offsets[i]))[0] = v
        return obj
