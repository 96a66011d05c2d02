cimport cython
from inspector.framing cimport Framer

cdef class ConnectionStats:
    cdef public list bytes_seen, bytes_framed, bytes_gap, bytes_skipped, bytes_retransmitted, frames
    cdef public object decode_failures, requests_missing, responses_missing, pending_dropped

cdef class KafkaConnection:
    cdef public dict pending
    cdef public set seen_versions
    cdef public tuple framers
    cdef public list _undecided, _request_failures
    cdef public object conn_id, max_pending, max_elements, endpoints, client_side
    cdef public object last_correlation_id
    cdef public ConnectionStats stats

    @cython.locals(framer=Framer)
    cpdef list data(self, side, ts, view)
    cpdef list _handle(self, side, list events)
    cpdef _frame(self, side, frame)
    cpdef _request(self, frame)
    cpdef _response(self, frame)
    cpdef tuple _roles(self)

cpdef bint _expects_no_response(msg) except -1
