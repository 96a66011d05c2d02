cimport cython
from decoders.api cimport DecodedMessage, be32, decode_request_bytes, decode_response_bytes
from inspector.kafka.framing cimport Frame, Framer

cdef double _ROUNDER

@cython.locals(micros=cython.double)
cdef inline double _latency_ms(double sent, double answered)

cdef class PendingRequest:
    cdef public object api_key, api_version, ts, client_id, inner, inner_correlation_id

cdef class KafkaMessage:
    cdef public object ts, conn_id, client, broker, direction, frame_offset, message, client_id, latency_ms
    cdef public object request_missing, candidates, confidence, principal, sasl_mechanism, tls

@cython.locals(m=KafkaMessage)
cpdef KafkaMessage _new_message(ts, conn_id, client, broker, direction, frame_offset, message, client_id,
                                latency_ms, request_missing, candidates, confidence, principal, sasl_mechanism)

cdef class ConnectionStats:
    cdef public list bytes_seen, bytes_framed, bytes_gap, bytes_skipped, bytes_retransmitted, frames
    cdef public object decode_failures, requests_missing, responses_missing, pending_dropped

cdef class KafkaConnection:
    cdef public dict pending
    cdef public set seen_versions
    cdef public tuple framers
    cdef public list _undecided, _request_failures
    cdef public object conn_id, max_pending, max_elements, client_side
    cdef public tuple endpoints
    cdef public bint body_text
    cdef public object last_correlation_id
    cdef public ConnectionStats stats
    cdef public object sasl, _token_ts
    cdef public bint _tokens

    @cython.locals(framer=Framer)
    cpdef list data(self, side, ts, view)
    cpdef list _handle(self, side, list events)
    cpdef _framed(self, side, Frame frame, list out)
    cpdef _frame(self, side, Frame frame)
    @cython.locals(msg=DecodedMessage, inner=DecodedMessage, pending=PendingRequest)
    cpdef _request(self, Frame frame)
    @cython.locals(msg=DecodedMessage, req=PendingRequest)
    cpdef _response(self, Frame frame)
    @cython.locals(side=cython.int)
    cpdef tuple _roles(self)

@cython.locals(body=dict)
cpdef bint _expects_no_response(DecodedMessage msg) except -1

cdef class Endpoint:
    cdef readonly object ip, port

cdef class StreamIssue:
    cdef readonly object ts, conn_id, side, offset, length, kind, reason
