"""The command line's arguments: a bad value is one line on stderr at parse time, exit code 2; ``--version``."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from contract.errors import ExitCode
from inspector.cli.main import build_parser, main

REPO = Path(__file__).resolve().parents[3]
PCAP = str(REPO / "pcaps" / "tansu-consumer-group-3-members.pcap")


@pytest.mark.parametrize("argv,needle", [
    (["show", PCAP, "--port", "70000"], "argument --port: not a port: '70000' (a TCP port is 1 to 65535)"),
    (["show", PCAP, "--port", "0"], "argument --port: not a port: '0'"),
    (["show", PCAP, "--port", "kafka"], "argument --port: not a port: 'kafka'"),
    (["read", PCAP, "-o", "out", "--jobs", "-3"], "argument --jobs/-j: '-3' is too small: at least 0"),
    (["read", PCAP, "-o", "out", "--port", "-1"], "argument --port: not a port: '-1'"),
    (["show", PCAP, "--limit", "-1"], "argument --limit: '-1' is too small: at least 1"),
    (["show", PCAP, "--max-connections", "0"], "argument --max-connections: '0' is too small: at least 1"),
    (["show", PCAP, "--max-pending", "-5"], "argument --max-pending: '-5' is too small: at least 1"),
    (["clients", PCAP, "--max-frame", "lots"], "argument --max-frame: not a size: 'lots'"),
    (["tap", "-i", "lo", "-o", "out", "--rotate", "-1"], "argument --rotate: not a duration: '-1'"),
    (["tap", "-i", "lo", "-o", "out", "--rotate", "soon"], "argument --rotate: not a duration: 'soon'"),
    (["tap", "-i", "lo", "-o", "out", "--rotate-size", "1TB"], "argument --rotate-size: not a size: '1TB'"),
    (["tap", "-i", "lo", "-o", "out", "--count-packets", "-2"], "argument --count-packets: not a count: '-2'"),
    (["tap", "-i", "lo", "-o", "out", "--port", "99999"], "argument --port: not a port: '99999'"),
    (["show"], "the following arguments are required: capture"),
    (["nosuchcommand"], "argument command: invalid choice: 'nosuchcommand'"),
    ([], "the following arguments are required: command"),
])
def test_a_bad_argument_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                               needle: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == ExitCode.USAGE
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1, out.err
    assert needle in out.err and out.err.startswith("kafka-inspector") and "--help" in out.err


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == ExitCode.OK
    assert capsys.readouterr().out == f"kafka-inspector {importlib.metadata.version('kafka-inspector')}\n"
    proc = subprocess.run([sys.executable, "-m", "inspector.cli.main", "--version"], capture_output=True, text=True,
                          cwd=REPO, check=True)
    assert proc.stdout.startswith("kafka-inspector ") and proc.stderr == ""


def test_the_good_values_parse() -> None:
    parser = build_parser()
    args = parser.parse_args(["show", PCAP, "--port", "65535", "--port", "1", "--limit", "1_000",
                              "--max-connections", "1", "--max-pending", "1"])
    assert (args.port, args.limit, args.max_connections, args.max_pending) == ([65535, 1], 1000, 1, 1)
    assert parser.parse_args(["read", PCAP, "-o", "o", "--jobs", "0"]).jobs == 0
    assert parser.parse_args(["show", PCAP]).limit is None
