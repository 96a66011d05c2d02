cimport cython
from decoders.api cimport DecodedMessage
from inspector.connection cimport KafkaMessage

cdef class ApiStats:
    cdef public object requests, responses, errors, decode_failures, decode_warnings, latencies

cdef class Summary:
    cdef public object apis, frames, messages, decode_failures, decode_warnings, stream_issues, connections
    cdef public object empty_connections, non_kafka_connections, non_kafka_bytes, packets, packets_skipped
    cdef public object warnings, max_conn_id, limits

    @cython.locals(stats=ApiStats, msg=DecodedMessage, inner=DecodedMessage)
    cpdef message(self, KafkaMessage ev)
