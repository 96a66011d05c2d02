"""Compiled (Cython) readers of the generated decoders: the fast path of ``decoders.api``.

The ``.pyx`` modules are rendered with the plain-Python readers from one model (``python -m decoders.codegen``)
and compiled by ``setup.py``. A compiled reader fails as the plain reader of the same layout fails: the same
DecodeError, naming the field path and offset where it stopped (``_where.pyx``), so nothing decodes again. Inside,
a failure is noted and returned, not raised: the entry point raises it, or an embedded structure's quiet entry
gives its status (``QUIET_VERSIONS``). String fields are decoded by ``_utf8.pyx``, as the plain readers decode them.
"""
