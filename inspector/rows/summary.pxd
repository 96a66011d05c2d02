cimport cython
from decoders.api cimport DecodedMessage
from inspector.kafka.connection cimport KafkaMessage

cdef dict _API_NAMES

cdef class ApiStats:
    cdef public long long requests, responses, errors, decode_failures, decode_warnings
    cdef public list latencies

cdef class Summary:
    cdef public dict apis, stream_issues, packets_skipped, limits, ignored_segments, ignored_bytes
    cdef public list connections, warnings
    cdef public long long frames, messages, decode_failures, decode_warnings, empty_connections
    cdef public long long non_kafka_connections, non_kafka_bytes, packets, max_conn_id

    @cython.locals(stats=ApiStats, msg=DecodedMessage, inner=DecodedMessage, body=dict)
    cpdef message(self, KafkaMessage ev)
