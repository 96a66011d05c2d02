"""The v2 record batch header (KIP-98) as data: the one model of a batch's headers-level summary.

A batch's summary at the headers level is, in this order: ``byteOffset`` (where the batch starts in the field),
the header's fields (:data:`FIELDS`), with what the attributes say (:data:`ATTRIBUTES`) right after
``attributes``, and ``"status": "ok"``. Two renderings of this one model make it:

* :func:`v2_summary`, the dict (``decoders.records.decode_records``; at the records level the batch's records
  are added to it);
* ``decoders/native/_records.pyx``, rendered from this module by ``python -m decoders.codegen``
  (``decoders.codegen.render_records``): the same summary written as JSON straight from the batch bytes, for the
  events' body column and the generated text writers.

``tests/decoders/test_native.py`` holds the two to the same text on every capture's record sets.
"""

from __future__ import annotations

from struct import Struct
from typing import Any, Final

__all__ = ["ATTRIBUTES", "COMPRESSION_NAMES", "FIELDS", "V2_HEADER", "field_offsets", "v2_summary"]

#: The header's fields in byte order: (summary key, big-endian ``struct`` code).
FIELDS: Final = (
    ("baseOffset", "q"),
    ("batchLength", "i"),  # counts from partitionLeaderEpoch to the end of the batch
    ("partitionLeaderEpoch", "i"),
    ("magic", "b"),
    ("crc", "I"),  # CRC-32C of attributes .. the end of the batch, unsigned
    ("attributes", "h"),
    ("lastOffsetDelta", "i"),
    ("baseTimestamp", "q"),
    ("maxTimestamp", "q"),
    ("producerId", "q"),
    ("producerEpoch", "h"),
    ("baseSequence", "i"),
    ("recordCount", "i"),
)

#: The compression codecs by the attributes' low three bits (every magic).
COMPRESSION_NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)", "unknown(7)")

#: What the attributes say, written right after ``attributes``: (summary key, bit mask, the names of the masked
#: value shifted down to bit 0; None for a flag, written as a boolean).
ATTRIBUTES: Final[tuple[tuple[str, int, tuple[str, ...] | None], ...]] = (
    ("compression", 0x07, COMPRESSION_NAMES),
    ("timestampType", 0x08, ("CreateTime", "LogAppendTime")),
    ("isTransactional", 0x10, None),
    ("isControl", 0x20, None),
    ("hasDeleteHorizon", 0x40, None),
)

V2_HEADER: Final = Struct(">" + "".join(code for _, code in FIELDS))


def field_offsets() -> dict[str, tuple[int, str]]:
    """Each field's (byte offset in the header, ``struct`` code)."""
    offsets: dict[str, tuple[int, str]] = {}
    pos = 0
    for key, code in FIELDS:
        offsets[key] = (pos, code)
        pos += Struct(">" + code).size
    return offsets


#: (key, mask, shift, names) of each attribute, the shift being the mask's lowest set bit.
_ATTRIBUTE_PLAN: Final = tuple((key, mask, (mask & -mask).bit_length() - 1, names) for key, mask, names in ATTRIBUTES)


def v2_summary(pos: int, values: tuple[Any, ...]) -> dict[str, Any]:
    """The summary of the batch at ``pos`` whose header unpacked (:data:`V2_HEADER`) to ``values``."""
    summary: dict[str, Any] = {"byteOffset": pos}
    for (key, _code), value in zip(FIELDS, values, strict=True):
        summary[key] = value
        if key == "attributes":
            for name, mask, shift, names in _ATTRIBUTE_PLAN:
                summary[name] = (value & mask) != 0 if names is None else names[(value & mask) >> shift]
    summary["status"] = "ok"
    return summary
