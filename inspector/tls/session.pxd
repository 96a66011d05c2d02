cimport cython
from inspector.tls.tls_records cimport Record, RecordSplitter

cdef class _Direction:
    cdef public object application, control, decryptor, encrypted, fed, from_client, key_update, messages
    cdef public object overhead, phase, reported, seq, started, uncertain
    cdef public RecordSplitter splitter

cdef class TlsSession:
    cdef public object _blind, _hello, _keylog, _no_keys_reported, _renegotiated, _secrets, _secrets_generation
    cdef public object _server_hello, _stopped, _suite, _tls12, _version, description
    cdef public _Direction _client, _server

    @cython.locals(d=_Direction, out=list, record=Record)
    cpdef list feed(self, from_client, data, ts)
    @cython.locals(c=_Direction, s=_Direction, d=_Direction)
    cpdef held(self, from_client=*)
    cpdef _record(self, _Direction d, Record rec, list out)
    cpdef _undecrypted(self, _Direction d, Record rec, list out)
    cpdef _protected(self, _Direction d, Record rec, list out)
    cpdef _open13(self, _Direction d, Record rec)
