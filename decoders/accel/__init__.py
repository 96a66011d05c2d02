"""Compiled (Cython) twins of the generated decoders: the fast path of ``decoders.api``.

The ``.pyx`` modules are generated with the pure-Python ones (``python -m decoders.codegen``) and
compiled when the package is installed. Without a compiler, or with ``KAFKA_INSPECTOR_PURE=1`` in
the environment, the pure-Python decoders do all the work (same results, slower).
"""
