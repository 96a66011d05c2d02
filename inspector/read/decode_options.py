"""The decoding options shared by ``read``, ``show``, ``clients`` and ``tap``: their flags and the ``ReadOptions``
they make."""

from __future__ import annotations

import argparse

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from inspector.read.arg_types import parse_connections, parse_count, parse_pending, parse_port, parse_size
from inspector.read.reader import ReadOptions
from inspector.rows.event_table import RecordsOptions


def _mb(size: int) -> str:
    return f"{size >> 20}MB"


def add_decode_options(p: argparse.ArgumentParser) -> None:
    """The decoding flags (``--port``, ``--records``, the ``--max-*`` limits) on a subcommand's parser."""
    p.add_argument("--port", type=parse_port, action="append", default=[],
                   help="broker port: only connections to it are Kafka, and that side is the broker "
                        "(repeatable; default: detect Kafka by content on any port)")
    p.add_argument("--records", choices=("size", "headers", "records"), default="headers",
                   help="how much of Produce/Fetch record data to decode (default: batch headers)")
    p.add_argument("--decompress", action="store_true", help="decompress record batches (with --records records)")
    d = DEFAULT_LIMITS
    p.add_argument("--max-decompressed", type=parse_size, default=d.max_decompressed, metavar="SIZE",
                   help=f"cap on decompressed record data per message, all its records fields together "
                        f"(default {_mb(d.max_decompressed)})")
    p.add_argument("--max-frame", type=parse_size, default=d.max_frame, metavar="SIZE",
                   help=f"largest Kafka frame accepted; larger length prefixes are reported and skipped "
                        f"(default {_mb(d.max_frame)})")
    p.add_argument("--max-buffered", type=parse_size, default=d.max_buffered, metavar="SIZE",
                   help=f"out-of-order bytes buffered per TCP direction before a hole is declared a gap "
                        f"(default {_mb(d.max_buffered)})")
    p.add_argument("--max-connections", type=parse_connections, default=d.max_connections, metavar="N",
                   help=f"TCP connections tracked at once (the oldest idle ones are evicted; "
                        f"default {d.max_connections:,})")
    p.add_argument("--max-pending", type=parse_pending, default=d.max_pending, metavar="N",
                   help=f"requests per connection kept waiting for their response; beyond it the oldest is "
                        f"given up and counted as a missing response (default {d.max_pending:,})")
    p.add_argument("--max-held", type=parse_size, default=d.max_held, metavar="SIZE",
                   help=f"bytes held in incomplete frames and behind holes, all connections together; beyond it "
                        f"the connections holding the most are released and resync (default {_mb(d.max_held)})")
    p.add_argument("--max-elements", type=parse_count, default=d.max_elements, metavar="N",
                   help=f"elements decoded per message: array entries, tagged fields and record batches (20 "
                        f"each), of its embedded protocols and Envelope contents too, all together; a message with "
                        f"more is reported, not decoded (default {d.max_elements:,})")
    p.add_argument("--tls-keylog", metavar="FILE",
                   help="TLS key log (NSS format, as SSLKEYLOGFILE writes it): TLS connections whose secrets it "
                        "holds are decrypted and decoded like plaintext; without it they are counted as encrypted")


def read_options(args: argparse.Namespace) -> ReadOptions:
    """The ``ReadOptions`` of parsed decoding flags."""
    limits = DecodeLimits(
        max_frame=args.max_frame,
        max_buffered=args.max_buffered,
        max_connections=args.max_connections,
        max_pending=args.max_pending,
        max_held=args.max_held,
        max_elements=args.max_elements,
        max_decompressed=args.max_decompressed,
    )
    return ReadOptions(ports=frozenset(args.port), records=RecordsOptions(args.records, args.decompress),
                       limits=limits, tls_keylog=args.tls_keylog)
