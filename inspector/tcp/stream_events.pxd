cimport cython

cdef class ConnectionOpened:
    cdef readonly object conn_id, ts, a_ip, a_port, b_ip, b_port, saw_syn

cdef class StreamData:
    cdef readonly object conn_id, side, ts, offset, data, src, dst

@cython.locals(s=StreamData)
cpdef StreamData _new_stream_data(conn_id, side, ts, offset, data, src, dst)

cdef class StreamGap:
    cdef readonly object conn_id, side, ts, offset, length, reason, src, dst

cdef class SegmentTruncated:
    cdef readonly object conn_id, side, ts, offset, captured, missing, src, dst

cdef class DirectionStats:
    cdef readonly object bytes_seen, bytes_delivered, bytes_gap, retransmitted_bytes, out_of_order_segments
    cdef readonly object truncated_segments, highest_offset, buffered_bytes

cdef class ConnStats:
    cdef readonly object conn_id, sides

cdef class ConnectionClosed:
    cdef readonly object conn_id, ts, reason, stats
