cimport cython
from decoders.api cimport DecodedMessage
from decoders.topics cimport topic_refs
from inspector.kafka.connection cimport KafkaMessage
from inspector.kafka.topic_names cimport TopicNames

cdef frozenset _PROMOTED_KEYS
cpdef bint _has_promoted(dict body) except -1
cpdef object nested_codes(object codes, object top_level)
cpdef object _int(object value)

cdef class _RecordsSummary:
    cdef public object budget, limits, problems, records
    cdef public bint used

    cpdef reset(self)

cdef class EventTable:
    cdef public object capture, records, limit_hits
    cdef public object _default, _rows, _conn_rows, _conns, _conn_index, _extras, _bodies, _append_text
    cdef public object _last_conn_id, _last_client, _last_broker, _last_principal, _last_mechanism, _last_conn_index
    cdef public list _tls_rows
    cdef public TopicNames topic_names

    @cython.locals(msg=DecodedMessage, inner=DecodedMessage)
    cpdef add(self, KafkaMessage event)
    cpdef _conn(self, KafkaMessage ev, principal)
    cpdef _forget_last_conn(self)
    @cython.locals(encoder=_RecordsSummary, b=dict, promoted=bint)
    cpdef _add(self, KafkaMessage ev, DecodedMessage msg, DecodedMessage envelope, conn)

cdef class RecordsOptions:
    cdef readonly object level, decompress
