cimport cython
from decoders.element_budget cimport ElementBudget

cdef class DecodedMessage:
    cdef public object kind, api_key, api_version, correlation_id, status, body, size, client_id
    cdef public object header_version, header, body_version, error_path, error_offset, notes, inner, text, codes
    cdef public object status_kind, name, topics

cdef class _Readers:
    cdef readonly object header, body, post, text
    cdef readonly long header_version

@cython.locals(m=DecodedMessage)
cpdef DecodedMessage _new_message(kind, api_key, api_version, correlation_id, status, body, size, client_id,
                                  header_version, header, body_version, error_path, error_offset, notes, inner)
@cython.locals(hi=cython.uchar, lo=cython.uchar)
cpdef long be16(bytes b, Py_ssize_t p) except? -1
@cython.locals(b0=cython.uchar, b1=cython.uchar, b2=cython.uchar, b3=cython.uchar)
cpdef long long be32(bytes b, Py_ssize_t p) except? -1
@cython.locals(entry=_Readers, header=dict, api_key=cython.long, version=cython.long, corr=cython.longlong,
               written_msg=DecodedMessage, start=Py_ssize_t, out=tuple, size=Py_ssize_t)
cpdef DecodedMessage decode_request_within(bytes b, bint postprocess, ElementBudget budget, bint text=*)
cpdef DecodedMessage decode_request_bytes(bytes b, bint postprocess, object max_elements, bint text=*)
@cython.locals(entry=_Readers, written_msg=DecodedMessage, start=Py_ssize_t, out=tuple, size=Py_ssize_t, header=dict)
cpdef DecodedMessage decode_response_within(bytes b, object api_key, object api_version, object inner,
                                            bint postprocess, ElementBudget budget, bint text=*)
cpdef DecodedMessage decode_response_bytes(bytes b, object api_key, object api_version, object inner,
                                           bint postprocess, object max_elements, bint text=*)
@cython.locals(table=dict, key=cython.longlong)
cpdef object _readers(long long api_key, long long version, str kind)
cpdef object _exact(_Readers entry, bytes b, ElementBudget budget)
cpdef object _text(_Readers entry, bytes b, ElementBudget budget)
@cython.locals(entry=_Readers, header=dict)
cpdef object _response_exact(bytes b, object api_key, object api_version, ElementBudget budget, object over_budget)
