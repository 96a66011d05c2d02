"""Decrypting Kafka over TLS: `read --tls-keylog` against tshark with the same key log, on the TLS twin of the
frame-heavy bench capture, and what decryption costs against plaintext `read` of the same traffic.

    .venv/bin/python bench/bench_tls.py [CAPTURE] [--repeat N] [--tls12 SUITE]

CAPTURE defaults to bench/data/big-frames.pcap (``pcaps/make_captures.py --big 100 --big-profile frames
--output bench/data/big-frames.pcap``, as for bench_read.py); any smaller plaintext capture makes a quick run
(``pcaps/tansu-produce-fetch-compression.pcap``). Its TLS twin and key log are made first, in a temporary
folder (``bench/tls_twin.py``: every connection in real TLS 1.3, or TLS 1.2 with ``--tls12``'s OpenSSL cipher
string, the same Kafka bytes segment for segment at the same times). Then, in turn, ``--repeat`` times
(default 3), the run with the least CPU time of each shown, as bench_read.py does:

* ``kafka-inspector read`` of the plaintext capture,
* ``kafka-inspector read --tls-keylog KEYLOG`` of the twin,
* ``tshark -n -r TWIN -o tls.keylog_file:KEYLOG -d tcp.port==P,tls -d tls.port==P,kafka -Y kafka -T fields
  -e kafka.api_key ...`` (the brokers' ports learned from our output).

It prints the table, our frames per CPU second over tshark's on the twin (the target is 2x), and the
decryption overhead: (CPU of ``read --tls-keylog`` of the twin - CPU of ``read`` of the plaintext) / CPU of
``read`` of the plaintext, in %. The run fails (exit 1) unless the twin's events are the plaintext's (every
column but ``capture`` and ``tls``: the same times, offsets and bodies) and tshark found as many frames.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_read import Row, _run, bench_ours, bench_tshark, print_table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "bench" / "data" / "big-frames.pcap"
#: The events' columns a TLS twin differs in by nature: the capture's name and the TLS mark.
NATURE = ("capture", "tls")


def _events(out: Path) -> pa.Table:
    return pq.read_table(out / "events")


def differences(plain: Path, tls: Path) -> list[str]:
    """How the events ``read`` wrote to ``tls`` differ from those of ``plain`` (beside :data:`NATURE`): nothing
    when the decrypted capture gave the plaintext's events."""
    a, b = _events(plain), _events(tls)
    if a.num_rows != b.num_rows:
        return [f"{b.num_rows:,} events decrypted, {a.num_rows:,} in plaintext"]
    if not b.column("tls").to_pylist() == [True] * b.num_rows:
        return ["events of the twin not marked tls"]
    if a.num_rows and any(a.column("tls").to_pylist()):
        return ["plaintext events marked tls"]
    return [f"column {name} differs" for name in a.column_names
            if name not in NATURE and not a.column(name).equals(b.column(name))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool, in turn; the best is shown")
    parser.add_argument("--tls12", metavar="SUITE", help="a TLS 1.2 twin with this OpenSSL cipher string")
    args = parser.parse_args(argv)
    capture: Path = args.capture
    if not capture.exists():
        print(f"no capture {capture}: run `.venv/bin/python pcaps/make_captures.py --big 100 --big-profile frames "
              "--output bench/data/big-frames.pcap` first, or name a smaller one", file=sys.stderr)
        return 1
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        twin, keylog = Path(tmp) / f"tls-{capture.stem}.pcap", Path(tmp) / f"tls-{capture.stem}.keylog"
        # the twin is made in a child, as every run: a child's peak RSS counts its parent's at the start
        made, _, said = _run([sys.executable, str(REPO / "bench" / "tls_twin.py"), str(capture), str(twin),
                              "--keylog", str(keylog), *(["--tls12", args.tls12] if args.tls12 else [])], stdout=None)
        print(f"twin made in {made:.1f} s ({'TLS 1.2 ' + args.tls12 if args.tls12 else 'TLS 1.3'}): "
              f"{said.splitlines()[0].split(': ', 1)[-1]}")
        plain_out, tls_out = Path(tmp) / "plain", Path(tmp) / "tls"
        tls_args = ["--tls-keylog", str(keylog)]
        plain = bench_ours(capture, plain_out)
        ours = bench_ours(twin, tls_out, tls_args)
        ports = {int(p) for p in pq.read_table(plain_out / "events", columns=["broker_port"]).column(0).to_pylist()
                 if p is not None}
        theirs = bench_tshark(twin, ports, keylog) if shutil.which("tshark") else None
        for _ in range(args.repeat - 1):
            plain = min(plain, bench_ours(capture, plain_out), key=lambda r: r["cpu"])
            ours = min(ours, bench_ours(twin, tls_out, tls_args), key=lambda r: r["cpu"])
            if theirs is not None:
                theirs = min(theirs, bench_tshark(twin, ports, keylog), key=lambda r: r["cpu"])
        problems = differences(plain_out, tls_out)  # after the runs (the tables are large)
        size_mb, twin_mb = capture.stat().st_size / 1e6, twin.stat().st_size / 1e6
    rows.append((capture.name, "kafka-inspector read", size_mb, plain))
    rows.append((twin.name, "read --tls-keylog", twin_mb, ours))
    if theirs is not None:
        rows.append((twin.name, "tshark tls.keylog_file -T fields", twin_mb, theirs))
    print_table(rows, args.repeat)
    overhead = (ours["cpu"] - plain["cpu"]) / plain["cpu"] * 100
    print(f"decryption overhead: {overhead:+.0f}% CPU against plaintext read of the same traffic "
          f"({ours['cpu']:.2f} s against {plain['cpu']:.2f} s)")
    if theirs is not None:
        cpu_ratio = (ours["frames"] / ours["cpu"]) / (theirs["frames"] / theirs["cpu"])
        print(f"{twin.name}: read --tls-keylog decodes {cpu_ratio:.2f}x tshark's frames per CPU second "
              f"(target 2x: {'met' if cpu_ratio >= 2 else 'NOT met'}; tshark decoded {int(theirs['frames']):,} of "
              f"our {int(ours['frames']):,})")
        if theirs["frames"] != ours["frames"]:
            problems.append(f"tshark decoded {int(theirs['frames']):,} frames, we {int(ours['frames']):,}")
    for problem in problems:
        print(f"MISMATCH: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
