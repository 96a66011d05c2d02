"""Compiled (Cython) readers of the generated decoders: the one reader of each layout of the hot APIs and of
every header and embedded structure (``decoders.generated_modules``).

The ``.pyx`` modules are rendered from the one model (``python -m decoders.codegen``) and compiled by
``setup.py``; no plain Python copy of them ships. A compiled reader fails as the plain reader the other renderer
makes of the same layout fails (the tests' reference: ``tests/decoders/plain_readers.py``): the same
DecodeError, naming the field path and offset where it stopped (``_where.pyx``), so nothing decodes again. Inside,
a failure is noted and returned, not raised: the entry point raises it, or an embedded structure's quiet entry
gives its status (``QUIET_VERSIONS``). String fields are decoded by ``_utf8.pyx``, as the plain readers decode them.
"""
