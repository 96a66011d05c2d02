"""``kafka-inspector show``: one line per message off a terminal, filters spelt as JSON, ``--limit`` said honestly,
the warnings and hints ``read`` gives, endpoints as ``[v6]:port``, pipes and directories as inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from scapy.layers.inet import TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from contract.errors import ExitCode
from inspector.cli.main import main
from tests.frames import frame, metadata_request_v0, metadata_response_v0

REPO = Path(__file__).resolve().parents[3]
GROUP = REPO / "pcaps" / "tansu-consumer-group-3-members.pcap"  # 410 messages, 16 JoinGroup
TLS = REPO / "pcaps" / "tls" / "tansu-tls12-aiokafka.pcap"


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(["show", *argv])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_piped_show_is_one_line_per_message() -> None:
    """Off a terminal (the 80 columns rich assumes there) no line is wrapped: ``| grep JoinGroup | grep client=``
    finds every JoinGroup line, and the output has one line per message and the count."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "inspector.cli.main", "show", str(GROUP)], capture_output=True,
                          text=True, env=env, cwd=REPO, check=True)
    lines = proc.stdout.splitlines()
    assert lines[-1] == "410 of 410 messages shown"
    assert len(lines) == 411 and all(" #" in line for line in lines[:-1])
    joins = [line for line in lines if "JoinGroup" in line]
    assert len(joins) == 16 and all("client=" in line and " corr=" in line for line in joins)
    assert max(map(len, lines)) > 80


def test_limit_says_it_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _show(capsys, str(GROUP), "--limit", "4")
    assert code == ExitCode.OK and len(lines) == 5
    assert lines[-1] == "4 shown (stopped at --limit 4, after 4 messages read)"
    code, lines, _ = _show(capsys, str(GROUP), "--limit", "2", "--filter", "api_name=JoinGroup")
    assert code == ExitCode.OK and len(lines) == 3 and all("JoinGroup" in line for line in lines[:2])
    assert lines[-1].startswith("2 shown (stopped at --limit 2, after ") and "of 410" not in lines[-1]


@pytest.mark.parametrize("bad", ["-1", "0", "four"])
def test_limit_must_be_a_positive_number(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["show", str(GROUP), "--limit", bad])
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--limit" in err and "Traceback" not in err


def _count(capsys: pytest.CaptureFixture[str], *filters: str) -> int:
    argv = [str(GROUP)]
    for f in filters:
        argv += ["--filter", f]
    code, lines, err = _show(capsys, *argv)
    assert code == ExitCode.OK, err
    return int(lines[-1].split()[0].replace(",", ""))


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The capture's events as ``read`` writes them: what each filter is counted against."""
    out = tmp_path_factory.mktemp("read") / "out"
    assert main(["read", str(GROUP), "--output", str(out), "--quiet"]) == ExitCode.OK
    return pq.read_table(out / "events").to_pylist()


def test_filters_take_json_spellings(capsys: pytest.CaptureFixture[str], rows: list[dict]) -> None:
    def expected(keep: Callable[[dict], bool]) -> int:
        return sum(1 for r in rows if keep(r))

    assert len(rows) == 410
    # null is asked for, and never matched by a comparison: error_code!=0 leaves out the rows without one.
    assert _count(capsys, "error_code=null") == expected(lambda r: r["error_code"] is None) > 0
    assert _count(capsys, "error_code!=null") == expected(lambda r: r["error_code"] is not None) > 0
    assert _count(capsys, "error_code!=0") == expected(lambda r: r["error_code"] not in (None, 0)) > 0
    assert _count(capsys, "error_code=0") == expected(lambda r: r["error_code"] == 0) > 0
    assert _count(capsys, "tls=false") == _count(capsys, "tls=False") == 410
    assert _count(capsys, "tls=true") == 0
    # Numbers compare as numbers: 07 is 7, and the order operators work on numbers.
    joins = expected(lambda r: r["api_name"] == "JoinGroup" and r["api_version"] == 7)
    assert _count(capsys, "api_version=07", "api_name=JoinGroup") == _count(
        capsys, "api_version=7", "api_name=JoinGroup") == joins > 0
    slow = _count(capsys, "latency_ms>=100")
    assert slow == expected(lambda r: r["latency_ms"] is not None and r["latency_ms"] >= 100) > 0
    assert slow + _count(capsys, "latency_ms<100") == expected(lambda r: r["latency_ms"] is not None)
    python = expected(lambda r: r["client_id"] == "kafka-python-member")
    assert _count(capsys, 'client_id="kafka-python-member"') == _count(capsys, "client_id=kafka-python-member") \
        == _count(capsys, "client_id~^kafka-python") == python > 0
    assert _count(capsys, "ts>=2000-01-01") == 410 and _count(capsys, "ts<2000-01-01T00:00:00Z") == 0


@pytest.mark.parametrize("expr,needle", [
    ("api_name~(", "regular expression does not compile"),
    ("api_name==JoinGroup", "write api_name=JoinGroup"),
    ("tls=yes", "tls is true or false"),
    ("error_code=none", "error_code is a number"),
    ("nonsense", "write COLUMN=VALUE"),
    ("no_such_column=1", "no column 'no_such_column'"),
    ("api_name>Join", "orders numbers and times"),
    ("latency_ms<null", "null has no order"),
    ("ts>yesterday", "ts is a time"),
])
def test_a_bad_filter_is_one_line(capsys: pytest.CaptureFixture[str], expr: str, needle: str) -> None:
    code, lines, err = _show(capsys, str(GROUP), "--filter", expr)
    assert code == ExitCode.USAGE and lines == []
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_show_gives_the_tls_hint_read_gives(capsys: pytest.CaptureFixture[str]) -> None:
    """A TLS capture without a key log (and with the wrong one): nothing to show, and the line that says why."""
    for extra in ((), ("--tls-keylog", str(TLS.with_name("tansu-tls12-kafkajs.keylog")))):
        code, lines, _ = _show(capsys, str(TLS), *extra)
        assert code == ExitCode.OK and lines[0] == "0 of 0 messages shown"
        hint = " ".join(lines[1:])
        assert hint.startswith("TLS: 5 TLS connections not decrypted (7,623 bytes encrypted; no keys ×5)")
        assert "--tls-keylog FILE" in hint


def test_show_repeats_reads_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(GROUP.read_bytes()[:-10])
    code, lines, _ = _show(capsys, str(cut))
    assert code == ExitCode.OK
    assert lines[-1].startswith("warning: cut.pcap: last record is truncated")


def test_ipv6_endpoints_are_bracketed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcap = tmp_path / "v6.pcap"
    client, broker = ("::1", 37838), ("fd00::2", 9092)
    seq = {"c": 1000, "b": 5000}
    packets = []

    def add(src: str, flags: str, payload: bytes = b"") -> None:
        (s, d), other = ((client, broker), "b") if src == "c" else ((broker, client), "c")
        p = Ether() / IPv6(src=s[0], dst=d[0]) / TCP(sport=s[1], dport=d[1], flags=flags, seq=seq[src],
                                                      ack=seq[other]) / payload
        p.time = 1_700_000_000 + len(packets) / 1000
        packets.append(p)
        seq[src] += len(payload) + (1 if "S" in flags or "F" in flags else 0)

    add("c", "S"), add("b", "SA"), add("c", "A")
    add("c", "PA", frame(metadata_request_v0(1, ["orders"])))
    add("b", "PA", frame(metadata_response_v0(1, [(1, "b1", 9092)], ["orders"])))
    wrpcap(str(pcap), packets)
    code, lines, _ = _show(capsys, str(pcap))
    assert code == ExitCode.OK and lines[-1] == "2 of 2 messages shown"
    assert " [::1]:37838 → [fd00::2]:9092 Metadata v0 request" in lines[0]
    assert " [::1]:37838 ← [fd00::2]:9092 Metadata v0 response" in lines[1]


def test_a_fifo_is_read_as_a_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``show <(cat x.pcap)``: a pipe is a capture like a file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as f:
            f.write(GROUP.read_bytes())

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        code, lines, err = _show(capsys, str(fifo), "--filter", "api_name=JoinGroup")
    finally:
        writer.join(30)
    assert (code, err) == (ExitCode.OK, "") and lines[-1] == "16 of 410 messages shown"


def test_a_directory_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, lines, err = _show(capsys, str(tmp_path))
    assert code == ExitCode.INPUT and lines == []
    assert err == f"kafka-inspector: error: {tmp_path} is a directory: name the capture files in it (for example " \
                  f"{tmp_path}/*.pcap)\n"


def test_a_key_log_that_is_a_directory_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, lines, err = _show(capsys, str(TLS), "--tls-keylog", str(tmp_path))
    assert code == ExitCode.USAGE and lines == []
    assert err == f"kafka-inspector: error: --tls-keylog {tmp_path} is a directory: give the key log file " \
                  "(SSLKEYLOGFILE) in it\n"


def test_a_reader_that_leaves_early_is_no_error() -> None:
    """``show X | head -1``: the rest is not written, nothing on stderr, exit 0 (rich's own handling exited 1)."""
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m inspector.cli.main show -v {GROUP} | head -1; "
                                         "echo \"${PIPESTATUS[0]}\""], capture_output=True, text=True, cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO)})
    first, code = proc.stdout.splitlines()
    assert " ApiVersions v4 request " in first and code == "0" and proc.stderr == ""
