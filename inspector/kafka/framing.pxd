cimport cython

cdef class Frame:
    cdef public object ts, first_ts, offset, data

@cython.locals(f=Frame)
cpdef Frame _new_frame(ts, first_ts, offset, data)

cdef class Framer:
    cdef public list _chunks
    cdef public object plausible, confirm, max_frame, max_scan, offset, _loose, buffered, _need, _length
    cdef public object _first_ts, _scan_need, min_frame, scan_window, _top, _maybe_start, frames, bytes_framed
    cdef public object bytes_skipped
    cdef public bint synced

    cpdef list data(self, ts, view)
    cpdef list _whole_frames(self, ts, view)
    cpdef _drain_synced(self, ts, list out)

cdef class Skipped:
    cdef readonly object ts, offset, length, reason

cdef class Oversized:
    cdef readonly object ts, offset, length
