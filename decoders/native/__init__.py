"""The decoders' typed native modules (Cython, compiled by ``setup.py``): the one place each of these
behaviours lives.

``_records``: a record set's headers-level summary written as JSON straight from the batch bytes (used by the
events table and the generated text writers); ``_json.pxd``: the JSON string writer they share.
"""
