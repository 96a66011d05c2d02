"""The decoding options shared by ``read``, ``show``, ``clients`` and ``tap``: their flags and the ``ReadOptions``
they make."""

from __future__ import annotations

import argparse

from inspector.arg_types import parse_connections, parse_count, parse_pending, parse_port, parse_size
from inspector.connection import MAX_ELEMENTS, MAX_PENDING
from inspector.events import RecordsOptions
from inspector.pipeline import MAX_HELD
from inspector.reader import ReadOptions


def add_decode_options(p: argparse.ArgumentParser) -> None:
    """The decoding flags (``--port``, ``--records``, the ``--max-*`` limits) on a subcommand's parser."""
    p.add_argument("--port", type=parse_port, action="append", default=[],
                   help="broker port: only connections to it are Kafka, and that side is the broker "
                        "(repeatable; default: detect Kafka by content on any port)")
    p.add_argument("--records", choices=("size", "headers", "records"), default="headers",
                   help="how much of Produce/Fetch record data to decode (default: batch headers)")
    p.add_argument("--decompress", action="store_true", help="decompress record batches (with --records records)")
    p.add_argument("--max-decompressed", type=parse_size, default=64 << 20, metavar="SIZE",
                   help="cap on decompressed record data per message, all its records fields together "
                        "(default 64MB)")
    p.add_argument("--max-frame", type=parse_size, default=100 << 20, metavar="SIZE",
                   help="largest Kafka frame accepted; larger length prefixes are reported and skipped")
    p.add_argument("--max-buffered", type=parse_size, default=8 << 20, metavar="SIZE",
                   help="out-of-order bytes buffered per TCP direction before a hole is declared a gap")
    p.add_argument("--max-connections", type=parse_connections, default=100_000, metavar="N",
                   help="TCP connections tracked at once (the oldest idle ones are evicted)")
    p.add_argument("--max-pending", type=parse_pending, default=MAX_PENDING, metavar="N",
                   help=f"requests per connection kept waiting for their response; beyond it the oldest is "
                        f"given up and counted as a missing response (default {MAX_PENDING:,})")
    p.add_argument("--max-held", type=parse_size, default=MAX_HELD, metavar="SIZE",
                   help=f"bytes held in incomplete frames and behind holes, all connections together; beyond it "
                        f"the connections holding the most are released and resync (default {MAX_HELD >> 20}MB)")
    p.add_argument("--max-elements", type=parse_count, default=MAX_ELEMENTS, metavar="N",
                   help=f"elements decoded per message: array entries, tagged fields and record batches (20 "
                        f"each), of its embedded protocols and Envelope contents too, all together; a message with "
                        f"more is reported, not decoded (default {MAX_ELEMENTS:,})")
    p.add_argument("--tls-keylog", metavar="FILE",
                   help="TLS key log (NSS format, as SSLKEYLOGFILE writes it): TLS connections whose secrets it "
                        "holds are decrypted and decoded like plaintext; without it they are counted as encrypted")


def read_options(args: argparse.Namespace) -> ReadOptions:
    """The ``ReadOptions`` of parsed decoding flags."""
    return ReadOptions(
        ports=frozenset(args.port),
        records=RecordsOptions(args.records, args.decompress, args.max_decompressed),
        max_frame=args.max_frame,
        max_buffered=args.max_buffered,
        max_connections=args.max_connections,
        max_pending=args.max_pending,
        max_held=args.max_held,
        max_elements=args.max_elements,
        tls_keylog=args.tls_keylog,
    )
