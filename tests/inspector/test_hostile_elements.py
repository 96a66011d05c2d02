"""Hostile input: a frame of millions of tiny array entries (``--max-elements``, the per-message budget of
array elements the decoders build).

A 21 MB JoinGroup v6 request whose Protocols array holds 3.5 M entries of 6 bytes each (flexible versions:
a compact name, compact metadata and an empty tag buffer) made ~920 MB of Python objects when decoded, and
twice that peak RSS. With the budget (default 1,000,000 elements per message) the decoder stops at the
array's count: the event's ``decode_status`` names ``--max-elements`` and the array, ``summary.json``
counts the hit, and ``read`` stays small and fast. Measured like ``test_hostile.py`` (child process peak
RSS, wall time). Raising the limit to 5 M for the 21 MB frame decodes it (status ok) but takes ~1.8 GB
peak RSS and ~30 s, so that direction is shown with a smaller frame (10,000 entries).

Captures are stamped with ``struct`` (a 21 MB stream through scapy takes too long); checksums are zero,
which the reader does not check.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import stat
import struct
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from contract.limits import DecodeLimits
from decoders import _runtime
from inspector.cli.main import build_parser, main
from inspector.read.reader import ReadOptions, iter_capture
from inspector.rows.event_table import EventTable
from inspector.rows.summary import LIMITS, Summary
from inspector.tap.command import add_parser
from inspector.tap.command import run as run_tap
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, kstr, request_header
from tests.inspector.hostile_captures import check_bounds, produce_v3, record_batch, run_read, uvarint

ETHERNET = bytes.fromhex("020000000002" "020000000001" "0800")
CLIENT = (bytes([10, 0, 0, 1]), 40000)
BROKER = (bytes([10, 0, 0, 2]), 9092)
HOSTILE_ENTRIES = 3_500_000
#: One Protocols entry: Name "r" (compact string), Metadata 0x0000 (compact bytes), no tagged fields.
ENTRY = b"\x02r" + b"\x03\x00\x00" + b"\x00"
LIMIT_NEEDLE = "exceeds the elements left of this message's budget (--max-elements) at Protocols"


# ----------------------------------------------------------------------------------------------------
# Frames


def cstr(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def join_group_v6_request(corr: int, entries: int, entry: bytes = ENTRY) -> bytes:
    """JoinGroup v6 (flexible, request header v2) offering ``entries`` protocols: the length-prefixed frame."""
    header = struct.pack(">hhi", 11, 6, corr) + kstr("hostile") + b"\x00"
    body = cstr("g") + struct.pack(">ii", 30000, 60000) + cstr("") + b"\x00" + cstr("consumer")
    body += uvarint(entries + 1) + entry * entries + b"\x00"
    return frame(header + body)


def join_group_v6_response(corr: int, error: int = 25) -> bytes:
    """JoinGroup v6 response (response header v1), no members: error 25 (UNKNOWN_MEMBER_ID) by default."""
    body = struct.pack(">ihi", 0, error, -1) + cstr("") + cstr("") + cstr("") + uvarint(1) + b"\x00"
    return frame(struct.pack(">i", corr) + b"\x00" + body)


HELLO = [("c", frame(api_versions_request_v0(1))), ("b", frame(api_versions_response_v0(1, [(11, 0, 9)])))]
AFTER = [("c", frame(api_versions_request_v0(3))), ("b", frame(api_versions_response_v0(3, [(11, 0, 9)])))]


# ----------------------------------------------------------------------------------------------------
# Captures, stamped with struct


class Pcap:
    """A classic pcap (Ethernet) built in memory: TCP connections given as (client, broker) byte streams."""

    def __init__(self) -> None:
        self.parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
        self.us = 1_700_000_000_000_000

    def packet(self, src: tuple[bytes, int], dst: tuple[bytes, int], flags: int, seq: int, ack: int,
               payload: bytes = b"") -> None:
        tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535,
                          0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src[0], dst[0])
        size = len(ETHERNET) + len(ip) + len(tcp) + len(payload)
        us = self.us
        self.us += 10
        self.parts.append(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, size, size) + ETHERNET + ip + tcp)
        self.parts.append(payload)

    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(self.parts))
        return path


class Conn:
    """One TCP connection of a :class:`Pcap`: handshake, data either way cut into ``mss`` segments, FINs."""

    def __init__(self, pcap: Pcap, client: tuple[bytes, int] = CLIENT, broker: tuple[bytes, int] = BROKER) -> None:
        self.pcap = pcap
        self.ends = {"c": client, "b": broker}
        self.seq = {"c": 1000, "b": 5000}

    def _send(self, who: str, flags: int, payload: bytes = b"") -> None:
        other = "b" if who == "c" else "c"
        self.pcap.packet(self.ends[who], self.ends[other], flags, self.seq[who], self.seq[other], payload)
        self.seq[who] += len(payload) + (1 if flags & 0x03 else 0)  # SYN and FIN take a sequence number

    def open(self) -> Conn:
        self._send("c", 0x02)
        self._send("b", 0x12)
        self._send("c", 0x10)
        return self

    def data(self, who: str, data: bytes, mss: int = 32768) -> Conn:
        for i in range(0, len(data), mss):
            self._send(who, 0x18, data[i:i + mss])
        return self

    def messages(self, messages: list[tuple[str, bytes]], mss: int = 32768) -> Conn:
        for who, data in messages:
            self.data(who, data, mss)
        return self

    def close(self) -> None:
        self._send("c", 0x11)
        self._send("b", 0x11)

    def syn(self) -> None:
        """The client's SYN, nothing more: a half-open connection."""
        self._send("c", 0x02)


def conversation_pcap(path: Path, messages: list[tuple[str, bytes]], handshake: bool = True) -> Path:
    pcap = Pcap()
    conn = Conn(pcap)
    if handshake:
        conn.open()
    conn.messages(messages)
    if handshake:
        conn.close()
    return pcap.write(path)


def _events(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / "events").to_pylist()


def _summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


# ----------------------------------------------------------------------------------------------------
# The 21 MB frame of 3.5 M protocols


@pytest.fixture(scope="module")
def hostile_frame() -> bytes:
    return join_group_v6_request(2, HOSTILE_ENTRIES)


#: The smallest Protocols entry: Name "", Metadata empty, no tagged fields. 1.2 M of them make a 3.6 MB frame.
TINY_ENTRY = b"\x01\x01\x00"


@pytest.mark.parametrize("case", ["answered", "unanswered", "alone"])
def test_join_group_of_3_5M_protocols(tmp_path: Path, hostile_frame: bytes, case: str) -> None:
    """``answered``: ApiVersions, the JoinGroup, its response, ApiVersions again. ``unanswered``: no response.
    ``alone``: only a JoinGroup, mid-stream (no handshake: the framer looks for a frame start and confirms it by
    decoding, which it does for frames within its 4 MB scan, so this one has 1.2 M entries of 3 bytes) with
    --port (without it a connection whose first 256 KB hold no message is not Kafka): a frame stopped by the
    budget is still a frame (it was skipped as undecodable bytes, the limit hit unreported)."""
    assert 20_000_000 < len(hostile_frame) < 22_000_000
    entries = HOSTILE_ENTRIES
    if case == "alone":
        entries = 1_200_000
        hostile_frame = join_group_v6_request(2, entries, TINY_ENTRY)
        messages = [("c", hostile_frame)]
    else:
        answer = [("b", join_group_v6_response(2))] if case == "answered" else []
        messages = [*HELLO, ("c", hostile_frame), *answer, *AFTER]
    pcap = conversation_pcap(tmp_path / f"join-{case}.pcap", messages, handshake=case != "alone")
    run = run_read(tmp_path, pcap, *(["--port", "9092"] if case == "alone" else []))
    summary = run.summary()
    rows = run.events()
    (join,) = [r for r in rows if r["api_name"] == "JoinGroup" and r["direction"] == "request"]
    check_bounds(f"JoinGroup of {entries / 1e6:.1f}M protocols, {len(hostile_frame) / 1e6:.1f} MB ({case})", run,
                 f"{summary['limits']['--max-elements']['hits']}x --max-elements: {join['decode_status'][:40]}")
    assert join["decode_status"].startswith(f"limit: array of {entries} elements ")
    assert LIMIT_NEEDLE in join["decode_status"], join["decode_status"]
    assert join["body"] is None and join["frame_size"] == len(hostile_frame) - 4
    assert join["correlation_id"] == 2 and join["client_id"] == "hostile"
    assert summary["limits"]["--max-elements"] == {"hits": 1, "meaning": LIMITS["--max-elements"]}
    assert summary["decode_failures"] == 1
    (conn,) = run.connections()
    assert conn["client_bytes_decoded"] == conn["client_bytes_seen"]  # the frame was framed, not skipped
    if case != "alone":
        others = [r for r in rows if r is not join]
        assert others and all(r["decode_status"] == "ok" for r in others)
        assert {r["correlation_id"] for r in others if r["api_name"] == "ApiVersions"} == {1, 3}
    if case == "answered":  # the request was still correlated: its response found it
        (response,) = [r for r in rows if r["api_name"] == "JoinGroup" and r["direction"] == "response"]
        assert response["latency_ms"] is not None and not response["request_missing"]
        assert response["error_code"] == 25
    if case == "unanswered":
        assert conn["responses_missing"] == 1


def test_join_group_of_3_5M_protocols_shown(tmp_path: Path, hostile_frame: bytes,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``show`` says the same, one line."""
    pcap = conversation_pcap(tmp_path / "join.pcap", [*HELLO, ("c", hostile_frame)])
    assert main(["show", str(pcap), "--filter", "api_name=JoinGroup"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "(--max-elements)" in " ".join(out.split()) and "1 of 3 messages shown" in out


# ----------------------------------------------------------------------------------------------------
# The option


@pytest.fixture(scope="module")
def ten_thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ApiVersions, a JoinGroup v6 of 10,000 protocols (60 KB), its response, ApiVersions."""
    path = tmp_path_factory.mktemp("elements") / "join-10k.pcap"
    return conversation_pcap(path, [*HELLO, ("c", join_group_v6_request(2, 10_000)),
                                    ("b", join_group_v6_response(2)), *AFTER])


def _join_status(out: Path) -> str:
    (join,) = [r for r in _events(out) if r["api_name"] == "JoinGroup" and r["direction"] == "request"]
    status: str = join["decode_status"]
    return status


@pytest.mark.parametrize(("limit", "hit"), [(None, False), ("5000", True), ("9999", True), ("10000", False),
                                             ("1_000", True), ("0", True)])
def test_max_elements_is_configurable(tmp_path: Path, ten_thousand: Path, limit: str | None, hit: bool) -> None:
    """The 10,000 entries decode with the default, and with a budget of exactly 10,000; below it they are the
    limit, named in the status and counted in summary.json; the other messages are not affected (but for a
    budget of 0: then the ApiVersions responses, with one element each, are over it too)."""
    out = tmp_path / "out"
    extra = ["--max-elements", limit] if limit is not None else []
    assert main(["read", str(ten_thousand), "--output", str(out), "--quiet", *extra]) == ExitCode.OK
    status = _join_status(out)
    summary = _summary(out)
    rows = _events(out)
    versions = {(r["direction"], r["decode_status"].split(" at ")[0]) for r in rows if r["api_name"] == "ApiVersions"}
    if hit:
        hits = 3 if limit == "0" else 1
        assert status.startswith("limit: array of 10000 elements ") and LIMIT_NEEDLE in status, status
        assert summary["limits"] == {"--max-elements": {"hits": hits, "meaning": LIMITS["--max-elements"]}}
        assert summary["decode_failures"] == hits
    else:
        assert status == "ok" and summary["limits"] == {} and summary["decode_failures"] == 0
    limited = ("response", "limit: array of 1 elements exceeds the elements left of this message's budget "
                           "(--max-elements)")
    assert versions == ({("request", "ok"), limited} if limit == "0" else {("request", "ok"), ("response", "ok")})
    (response,) = [r for r in rows if r["api_name"] == "JoinGroup" and r["direction"] == "response"]
    assert response["decode_status"] == "ok" and response["latency_ms"] is not None


def test_limit_is_shown_in_the_closing_table(tmp_path: Path, ten_thousand: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", str(ten_thousand), "--output", str(tmp_path / "out"), "--max-elements", "5000"]) == ExitCode.OK
    err = " ".join(capsys.readouterr().err.split())
    assert f"limit --max-elements: 1 {' '.join(LIMITS['--max-elements'].split())}" in err


def test_bad_max_elements_is_a_usage_error(tmp_path: Path, ten_thousand: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("-1", "many", "1e6"):
        with pytest.raises(SystemExit) as exc:
            main(["read", str(ten_thousand), "--output", str(tmp_path / "out"), "--max-elements", bad])
        assert exc.value.code == ExitCode.USAGE
        assert "--max-elements" in capsys.readouterr().err


def test_the_default_is_the_decoders_default() -> None:
    parser = build_parser()
    for argv in (["read", "x.pcap", "-o", "o"], ["show", "x.pcap"], ["tap", "-i", "lo", "-o", "o"]):
        args = parser.parse_args(argv)
        assert args.max_elements == _runtime.MAX_ELEMENTS == ReadOptions().limits.max_elements == 1_000_000, argv
    assert parser.parse_args(["show", "x.pcap", "--max-elements", "2_000_000"]).max_elements == 2_000_000


def test_jobs_workers_get_the_limit(tmp_path: Path, ten_thousand: Path) -> None:
    """``--jobs 2``: each worker process decodes with the option (ReadOptions reaches it)."""
    second = tmp_path / "again.pcap"
    second.write_bytes(ten_thousand.read_bytes())
    out = tmp_path / "out"
    assert main(["read", str(ten_thousand), str(second), "--output", str(out), "--quiet", "--jobs", "2",
                 "--max-elements", "5000"]) == ExitCode.OK
    joins = [r for r in _events(out) if r["api_name"] == "JoinGroup" and r["direction"] == "request"]
    assert len(joins) == 2 and all(LIMIT_NEEDLE in r["decode_status"] for r in joins)
    assert _summary(out)["limits"]["--max-elements"]["hits"] == 2


# ----------------------------------------------------------------------------------------------------
# tap: the same limits as read


def _limits_capture(path: Path) -> Path:
    """One capture that hits four limits (with LIMIT_OPTIONS): a JoinGroup of 10,000 protocols (--max-elements
    5000), a Produce whose 2 MiB of gzip records exceed --max-decompressed 1MB, 20 connections each holding
    100 KiB of a frame claiming 90 MB (--max-held 1MB), then 30 half-open connections (--max-connections 25)."""
    pcap = Pcap()
    Conn(pcap).open().messages([*HELLO, ("c", join_group_v6_request(2, 10_000)),
                                ("b", join_group_v6_response(2))]).close()
    batch = record_batch(1, gzip.compress(bytes(2 << 20)))
    Conn(pcap, client=(bytes([10, 0, 0, 3]), 40001)).open().messages([*HELLO, ("c", produce_v3(7, [batch]))]).close()
    flood = [Conn(pcap, client=(bytes([10, 1, 0, i + 1]), 20000 + i)).open() for i in range(20)]
    stream = struct.pack(">i", 90_000_000) + request_header(0, 3, 1, "hostile")
    stream += bytes(100 * 1024 - len(stream))
    for start in range(0, len(stream), 1448):
        for conn in flood:
            conn.data("c", stream[start:start + 1448])
    for conn in flood:
        conn.data("c", frame(api_versions_request_v0(2))).close()
    for i in range(30):
        Conn(pcap, client=(bytes([10, 2, 0, i + 1]), 30000 + i)).syn()
    return pcap.write(path)


LIMIT_OPTIONS = ["--port", "9092", "--max-elements", "5000", "--records", "records", "--decompress",
                 "--max-decompressed", "1MB", "--max-held", "1MB", "--max-connections", "25"]


def _fake_tcpdump(tmp_path: Path, capture: Path) -> Path:
    """An executable standing in for tcpdump: says it listens, writes ``capture`` as its pcap stream, exits 0
    (as ``tcpdump -c N`` does once it has its packets)."""
    script = tmp_path / "tcpdump"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "sys.stderr.write('tcpdump: listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes\\n')\n"
        "sys.stderr.flush()\n"
        f"sys.stdout.buffer.write(open({str(capture)!r}, 'rb').read())\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('0 packets captured\\n0 packets received by filter\\n0 packets dropped by kernel\\n')\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def test_tap_records_the_limits_read_records(tmp_path: Path) -> None:
    """tap and read on the same packets and options: the same limit hits in summary.json, all four of them
    (the tap used to record neither --max-held, --max-connections nor the record-data limits)."""
    if not os.path.isdir("/sys/class/net/lo"):
        pytest.skip("no lo interface")
    capture = _limits_capture(tmp_path / "limits.pcap")
    read_out, tap_out = tmp_path / "read", tmp_path / "tap"
    assert main(["read", str(capture), "--output", str(read_out), "--quiet", *LIMIT_OPTIONS]) == ExitCode.OK
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["tap", "-i", "lo", "-o", str(tap_out), "--quiet", "--tcpdump",
                              str(_fake_tcpdump(tmp_path, capture)), *LIMIT_OPTIONS])
    assert run_tap(args) == ExitCode.OK
    read_limits, tap_limits = _summary(read_out)["limits"], _summary(tap_out)["limits"]
    assert tap_limits == read_limits
    assert set(read_limits) == {"--max-elements", "--max-decompressed", "--max-held", "--max-connections"}
    assert read_limits["--max-elements"]["hits"] == 1 and read_limits["--max-decompressed"]["hits"] == 1
    assert read_limits["--max-held"]["hits"] == 10 and read_limits["--max-connections"]["hits"] == 5
    statuses = [r["decode_status"] for r in _events(tap_out) if r["api_name"] == "JoinGroup"]
    assert any(LIMIT_NEEDLE in s for s in statuses)


# ----------------------------------------------------------------------------------------------------
# Real captures: the default changes nothing


def _rows(path: Path, options: ReadOptions) -> tuple[list[dict[str, Any]], Summary]:
    summary = Summary()
    table = EventTable(capture=path.name, records=options.records)
    for ev in iter_capture(str(path), summary, options):
        table.add(ev)
    return table.take().to_pylist(), summary


def test_real_captures_are_unaffected_by_the_default(project_captures: list[Path]) -> None:
    """Every project capture decodes the same with the default budget as with none to speak of (2^40)."""
    for path in project_captures:
        default, summary = _rows(path, ReadOptions())
        unlimited, _ = _rows(path, ReadOptions(limits=DecodeLimits(max_elements=1 << 40)))
        assert default == unlimited, path.name
        assert "--max-elements" not in summary.limits, path.name
        assert not any("--max-elements" in (r["decode_status"] or "") or "--max-elements" in (r["body"] or "")
                       for r in default), path.name
