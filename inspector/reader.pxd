cimport cython
from inspector.connection cimport KafkaMessage
from inspector.events cimport EventTable
from inspector.pipeline cimport Inspector
from inspector.summary cimport Summary
from inspector.packets cimport Segment

@cython.locals(inspector=Inspector, summary=Summary, segment=Segment)
cpdef packet_messages(inspector, summary, seg, list out, counted=*)

@cython.locals(table=EventTable, summary=Summary)
cpdef read_captures(paths, writer, options=*, progress=*, summary=*, first_block=*)

@cython.locals(summary=Summary)
cpdef void count_events(summary, list events, list out, counted=*) except *

cdef class ReadOptions:
    cdef readonly object ports, records, limits, tls_keylog
