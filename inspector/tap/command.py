"""``kafka-inspector tap``: decode live Kafka traffic into a rotating Parquet events dataset.

This module is the command (its options, :func:`run`, ``python -m inspector.tap.command``). The tap itself:
``inspector.tap.controller`` decides (sans-I/O: events and the time in, actions out; outages, restarts,
rotation, stopping), ``inspector.tap.driver`` runs tcpdump, the clock, the signals and the files around
it, ``inspector.tap.tcpdump`` is the tcpdump child and ``inspector.tap.decode`` the decoding.

How packets get here
--------------------
``tcpdump -i IFACE -n -U -s 0 -B BUFFER -w - FILTER`` runs as a child process and writes a classic pcap
stream to a pipe; the tap reads whatever the pipe holds (``os.read``, never waiting for a full chunk)
into the parser ``read`` uses, :class:`~inspector.capture.parser.CaptureParser`, and the packets go
through the same sans-I/O path as ``read``: :func:`~inspector.capture.packets.parse_packet` →
:class:`~inspector.kafka.pipeline.Inspector` → :class:`~inspector.rows.event_table.EventTable`. tcpdump's libpcap
fills a
memory-mapped TPACKET_V3 ring of ``--buffer`` bytes in the kernel, packed block by block, which absorbs
bursts while Python decodes.

Real traffic replayed onto ``lo`` by tcpreplay (``bench/bench_tap.py --replay``, no broker or client on the
machine, the tap with ``--metrics`` on its own core): 140,000-170,000 packets/s decoded with zero kernel drops and
no growing lag (250,000 with ``--buffer 1GB``). With a broker and a load sender on the same 2 cores (the bench's
first mode), the highest rate decoded with zero kernel drops and no backlog: tcpdump pipe 18,000-21,000 packets/s
(``read`` of the same traffic from a file: 13,500-25,500 packets/s, decoding bounds both); a scapy
PF_PACKET sniffer with the same kernel BPF filter (one ``recvfrom`` and one Python call per packet in the
decoding thread) 12,700-17,500 at best, with drops at 4,000 when the machine was busy; tcpdump with
``--immediate-mode`` 8,000-11,000: in that mode libpcap uses a TPACKET_V2 ring with one slot per packet
sized for the largest frame (64 KiB on ``lo`` and on NICs with offloads), so 128 MiB hold ~2,000 packets.

Without immediate mode libpcap hands a block over when it is full or 1 s old: packets reach the tap
within about a second, and a block still being filled when tcpdump gets SIGINT is lost. So on a stop
request the tap does not signal tcpdump at once: it reads on until a packet captured after the request
arrives (everything before it has then been handed over) or, with no traffic, until the 1 s block
timeout has passed and the pipe has been quiet for 0.3 s; then SIGINT, then the pipe is drained to its
end. ``summary.json`` records how long that took (``tap.stop_catch_up_seconds``).

Kernel drops
------------
tcpdump prints its libpcap counters (``pcap_stats``: captured, received by filter, dropped by
kernel, and dropped by interface when non-zero) on stderr when it exits, and also whenever it gets
SIGUSR1 (Linux has no SIGINFO; tcpdump uses SIGUSR1 instead). The tap sends it SIGUSR1 once a
second (only after tcpdump printed "listening on": before it installs its handler the signal would
kill it) and parses those lines. Drops are shown live, written to ``summary.json`` and warned about;
the TCP streams they damage show up as gaps (``stream_issue_bytes.gap``, ``connections.parquet``).

Output
------
``DIR/events/part-NNNNN.parquet``, a new file every ``--rotate`` seconds and every ``--rotate-size``
bytes, whichever comes first. A file is written as ``DIR/events/.part-NNNNN.parquet.inprogress`` (a
hidden name that Spark and pyarrow datasets skip) and renamed when closed, so readers only ever see
complete files. Event batches go to the open file at least once a second. On exit (SIGINT, SIGTERM,
``--duration``, ``--count-packets``) tcpdump is stopped with SIGINT, the pipe is drained to its end,
the open connections are finished, the last file is closed, then ``DIR/connections.parquet`` and
``DIR/summary.json`` are written as ``read`` writes them (``summary.json`` gets a ``tap`` section).

Interface outages
-----------------
The capture interface may go down or disappear while the tap runs (``ip link set IFACE down``, a cable
pulled, a VPN or container interface re-created). The tap never exits for that. Two cases:

* the interface goes down (administratively or without carrier) but stays: current kernels keep
  tcpdump's packet socket bound, and it captures again once the interface is up. The tap watches
  ``/sys/class/net/IFACE`` once a second to notice and report it;
* the interface disappears (or an older kernel reports ``ENETDOWN``): tcpdump exits with "The interface
  disappeared" / "The interface went down". The tap keeps its decoding state and output open and starts
  tcpdump again after 0.5 s, 1 s, 2 s, 4 s, then every 5 s, while tcpdump says "No such device" or "not
  up"; once it listens again capture resumes (a new pcap stream, the same connections).

Either way one line says the interface is down and the tap is waiting, and one more that it is back.
Connections open across an outage keep their state; the bytes they exchanged meanwhile were not captured,
which the reassembler reports as gaps from the TCP sequence numbers (an ACK for missed bytes, the
out-of-order buffer limit, or the connection's end) and the framer resynchronises after, as for any
other loss: bytes before and after an outage are never joined. ``summary.json`` counts the outages
(``tap.interface_outages``, ``tap.interface_down_seconds``, ``tap.outages``: start, seconds, reason,
whether tcpdump exited and had to be started again, connections open) and a warning names them. ``--max-outage``
bounds the wait (default 0: wait for ever, as a capture service should; a supervisor restarting the tap
would lose the connections' state): beyond it the tap stops as on SIGTERM and exits with 3. SIGINT and
SIGTERM stop a waiting tap at once, as usual.

Metrics
-------
``--metrics HOST:PORT`` serves Prometheus metrics at ``/metrics``: ``inspector.tap.metrics`` counts (sans-I/O, from
each event batch written and from the counters the live view shows, once a second) and ``inspector.tap.metrics_http``
serves the last snapshot from ``prometheus_client``'s HTTP server thread. The README lists the metrics.

Full disk
---------
When writing fails (``ENOSPC``, ``EDQUOT``, ``EIO``, any ``OSError`` on write, close or rename) the tap stops
tcpdump and writes nothing more: the file in progress is deleted (never renamed into place), the files
completed before stay, ``connections.parquet`` and ``summary.json`` are not written, and one line names the
directory and the errno (``cannot write to DIR/events: No space left on device (ENOSPC); the file in progress
was removed, the 3 files completed before it are kept``). Exit code 4.

Exit codes: 0 done (also when stopped by a signal: that is how a tap ends); 2 bad usage (bad filter,
bad option); 3 capture problem (no tcpdump, no interface, no permission, tcpdump died for another reason
than an interface outage, an outage longer than ``--max-outage``); 4 the output could not be written.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from contract.errors import ExitCode
from inspector.read.arg_types import parse_count, parse_duration, parse_size
from inspector.read.decode_options import add_decode_options
from inspector.tap.driver import TapDriver, error_line


def _metrics_address(text: str) -> tuple[str, int]:
    from inspector.tap.metrics_http import parse_address

    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``tap`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "tap", help="capture live traffic (tcpdump) into a rotating Parquet events dataset",
        description="Capture live Kafka traffic with tcpdump, decode it as `read` does and write "
                    "DIR/events/part-NNNNN.parquet files, rotated by time and size. Stop with Ctrl-C or "
                    "SIGTERM: the open file is completed, then DIR/connections.parquet and DIR/summary.json "
                    "are written.")
    p.add_argument("--interface", "-i", required=True, metavar="IFACE",
                   help="interface to capture on (lo, eth0, any, ...)")
    p.add_argument("--filter", metavar="BPF", default=None,
                   help="extra BPF expression, ANDed with `tcp` and the --port terms")
    p.add_argument("--output", "-o", required=True, type=Path, help="output directory")
    p.add_argument("--rotate", type=parse_duration, default=60.0, metavar="DURATION",
                   help="start a new Parquet file after this long (default 60s; 0 = never)")
    p.add_argument("--rotate-size", type=parse_size, default=128 << 20, metavar="SIZE",
                   help="start a new Parquet file when the open one reaches this size (default 128MB; 0 = never)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no live view: one line per completed file on stderr, errors and warnings only")
    p.add_argument("--duration", type=parse_duration, default=0.0, metavar="SECONDS",
                   help="stop after this long (default: run until SIGINT/SIGTERM)")
    p.add_argument("--count-packets", type=parse_count, default=0, metavar="N",
                   help="stop after N captured packets (tcpdump -c N)")
    p.add_argument("--buffer", type=parse_size, default=128 << 20, metavar="SIZE",
                   help="kernel capture buffer (tcpdump -B; default 128MB): absorbs bursts while decoding")
    p.add_argument("--immediate-mode", action="store_true",
                   help="tcpdump --immediate-mode: packets reach the tap at once instead of within 1 s, but each "
                        "one takes a ring slot of the interface's largest frame (64 KiB on lo and on NICs with "
                        "offloads): kernel drops start at a much lower rate (see bench/bench_tap.py)")
    p.add_argument("--max-outage", type=parse_duration, default=0.0, metavar="DURATION",
                   help="when the interface goes down or disappears, wait at most this long for it to come back, "
                        "then stop with exit code 3 (default 0: wait for ever, retrying every 0.5-5 s)")
    p.add_argument("--metrics", type=_metrics_address, default=None, metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464; :9464 listens on "
                        "every interface): requests, responses, latency, bytes, decode failures, kernel drops, ...")
    p.add_argument("--tcpdump", default="tcpdump", metavar="PATH", help="tcpdump binary (default: from PATH)")
    add_decode_options(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace, stop: threading.Event | None = None) -> int:
    """Run ``tap`` with parsed options; ``stop`` (optional) ends it like SIGINT does. Returns the exit code."""
    if args.rotate < 0 or args.rotate_size < 0 or args.duration < 0 or args.count_packets < 0:
        error_line("--rotate, --rotate-size, --duration and --count-packets must not be negative")
        return ExitCode.USAGE
    return TapDriver(args, stop).run()


def main(argv: list[str] | None = None) -> int:
    """``python -m inspector.tap.command ...``: the tap on its own, without the rest of the command line."""
    parser = argparse.ArgumentParser(prog="kafka-inspector")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "tap":
        argv = ["tap", *argv]
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
