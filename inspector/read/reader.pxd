cimport cython
from inspector.kafka.connection cimport KafkaMessage
from inspector.rows.event_table cimport EventTable
from inspector.kafka.pipeline cimport Inspector
from inspector.rows.summary cimport Summary
from inspector.capture.packets cimport Segment

@cython.locals(inspector=Inspector, summary=Summary, segment=Segment)
cpdef packet_messages(inspector, summary, seg, list out, counted=*)

@cython.locals(table=EventTable, summary=Summary)
cpdef read_captures(paths, writer, options=*, progress=*, summary=*, first_block=*)

@cython.locals(summary=Summary)
cpdef void count_events(summary, list events, list out, counted=*) except *

cdef class ReadOptions:
    cdef readonly object ports, records, limits, tls_keylog
