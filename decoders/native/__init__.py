"""The decoders' typed native modules (Cython, compiled by ``setup.py``): the one place each of these
behaviours lives.

``_records``: a record set's headers-level summary written as JSON straight from the batch bytes (used by the
events table and the generated text writers), rendered from the one model of that summary,
``decoders/record_header.py``, by ``python -m decoders.codegen``; ``_json.pxd``: the JSON integer and string
writers every typed JSON writer shares.
"""
