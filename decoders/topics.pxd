cimport cython
from decoders.api cimport DecodedMessage

cdef int _NAME, _NAMES, _ID, _STRUCT, _STRUCTS, _PAIR
cdef dict _REQUEST, _RESPONSE

cpdef object topic_refs(DecodedMessage msg)
@cython.locals(table=dict, versions=dict, out=list)
cpdef object body_refs(object kind, object api_key, object version, dict body)
@cython.locals(op=cython.int)
cdef int _walk(dict d, tuple steps, list out) except -1
