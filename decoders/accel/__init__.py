"""Compiled (Cython) readers of the generated decoders: the fast path of ``decoders.api``.

The ``.pyx`` modules are rendered with the plain-Python readers from one model (``python -m decoders.codegen``)
and compiled by ``setup.py``. A compiled reader fails as the plain reader of the same layout fails: the same
DecodeError, naming the field path and offset where it stopped (``_where.pyx``), so nothing decodes again.
"""
