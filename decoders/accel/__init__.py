"""Compiled (Cython) readers of the generated decoders: the fast path of ``decoders.api``.

The ``.pyx`` modules are rendered with the plain-Python readers from one model (``python -m decoders.codegen``)
and compiled by ``setup.py``. A fast reader raises on any failure without detail; the plain reader of the same
layout then decodes again and names the field and offset where it stopped.
"""
