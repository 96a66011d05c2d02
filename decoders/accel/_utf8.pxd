# A string field's text (decoders/accel/_utf8.pyx), for the compiled readers (decoders/accel/*.pyx, generated).
# cython: language_level=3

cdef str utf8_text(const char* s, Py_ssize_t n)
