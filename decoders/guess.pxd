cdef class Guess:
    cdef readonly object message, candidates, confidence
