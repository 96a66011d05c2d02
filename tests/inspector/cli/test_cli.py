"""End to end: `kafka-inspector read` and `show` on real and generated captures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.rows.event_table import SCHEMA
from tests.frames import frame, metadata_request_v0, metadata_response_v0
from tests.pcapgen import conversation

REQUIRED = [
    "ts", "conn_id", "client_ip", "client_port", "broker_ip", "broker_port", "direction", "api_key", "api_name",
    "api_version", "correlation_id", "client_id", "frame_size", "error_code", "latency_ms", "decode_status",
    "body", "group_id", "member_id", "generation_id", "protocol_type", "protocol_name", "cluster_id", "node_id",
    "envelope_correlation_id", "principal",
]


def _read(tmp_path: Path, *captures: Path, extra: tuple[str, ...] = ()) -> list[dict]:
    out = tmp_path / "out"
    assert main(["read", *map(str, captures), "--output", str(out), "--quiet", *extra]) == ExitCode.OK
    return pq.read_table(out / "events").to_pylist()


def test_events_schema_has_the_contract_columns() -> None:
    assert set(REQUIRED) <= set(SCHEMA.names)
    assert str(SCHEMA.field("ts").type) == "timestamp[us, tz=UTC]"


def test_real_captures_decode_completely(tmp_path: Path, real_captures: list[Path]) -> None:
    rows = _read(tmp_path, *real_captures)
    assert rows, "no events"
    assert [r for r in rows if r["decode_status"] != "ok"] == []
    seen = {(r["api_name"], r["api_version"]) for r in rows if r["direction"] == "request"}
    for expected in [("Produce", 2), ("Produce", 7), ("Produce", 9), ("Fetch", 12), ("Fetch", 13),
                     ("JoinGroup", 7), ("SyncGroup", 5), ("LeaveGroup", 4), ("ApiVersions", 3),
                     ("OffsetCommit", 8), ("Heartbeat", 4), ("Metadata", 0), ("Produce", 1)]:
        assert expected in seen
    # Every response found its request (the captures hold both).
    responses = [r for r in rows if r["direction"] == "response"]
    assert responses and all(r["latency_ms"] is not None and not r["request_missing"] for r in responses)
    sync = next(r for r in rows if r["api_name"] == "SyncGroup" and r["direction"] == "request")
    assert (sync["group_id"], sync["protocol_type"], sync["protocol_name"]) == ("zzzz12", "consumer", "range")
    body = json.loads(sync["body"])
    assigned = body["Assignments"][0]["AssignmentDecoded"]
    assert assigned["value"]["AssignedPartitions"] == [{"Topic": "zqy-topic1", "Partitions": [0, 1, 2]}]
    join = next(r for r in rows if r["api_name"] == "JoinGroup" and r["direction"] == "request")
    assert join["protocol_type"] == "consumer" and join["protocol_name"]
    accounting = pq.read_table(tmp_path / "out" / "connections.parquet").to_pylist()
    for conn in accounting:
        assert conn["bytes_seen"] == conn["bytes_decoded"] + conn["bytes_undecodable"]


def test_generated_conversation_with_handshake(tmp_path: Path) -> None:
    pcap = tmp_path / "conv.pcap"
    big_topics = [f"topic-{i:04d}" for i in range(400)]  # spans several segments
    conversation(pcap, [("c", frame(metadata_request_v0(1, big_topics))),
                        ("b", frame(metadata_response_v0(1, [(3, "kafka-3", 9093)], big_topics)))])
    rows = _read(tmp_path, pcap)
    assert [(r["direction"], r["api_name"], r["correlation_id"]) for r in rows] == [
        ("request", "Metadata", 1), ("response", "Metadata", 1)]
    assert rows[0]["client_ip"] == "10.0.0.1" and rows[0]["broker_port"] == 9092
    assert len(json.loads(rows[1]["body"])["Topics"]) == 400


def test_gzip_and_jsonl_and_stdin(tmp_path: Path, real_captures: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    src = next(p for p in real_captures if "api-versions" in p.name)
    gz = tmp_path / "capture.pcap.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    out = tmp_path / "j"
    assert main(["read", str(gz), "--output", str(out), "--format", "jsonl", "--quiet"]) == ExitCode.OK
    lines = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [x["api_name"] for x in lines] == ["ApiVersions", "ApiVersions"]
    assert lines[0]["body"]["ClientSoftwareName"] == "apache-kafka-java"


def test_port_option_limits_to_that_broker(tmp_path: Path, real_captures: list[Path]) -> None:
    rows = _read(tmp_path, *real_captures, extra=("--port", "36333"))
    assert rows and {r["broker_port"] for r in rows} == {36333}


@pytest.mark.parametrize("content,needle", [
    (None, "no such file"),
    (b"", "empty"),
    (b"GET / HTTP/1.1\r\n\r\n" * 4, "not a"),
])
def test_bad_files_give_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        content: bytes | None, needle: str) -> None:
    path = tmp_path / "bad.pcap"
    if content is not None:
        path.write_bytes(content)
    code = main(["read", str(path), "--output", str(tmp_path / "o"), "--quiet"])
    assert code == ExitCode.INPUT
    err = capsys.readouterr()
    text = (err.out + err.err).strip()
    assert needle in text.lower() and "Traceback" not in text


def test_truncated_file_gives_partial_result_and_warning(tmp_path: Path, real_captures: list[Path]) -> None:
    src = next(p for p in real_captures if "api-versions" in p.name).read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src[: len(src) - 10])
    out = tmp_path / "o"
    assert main(["read", str(cut), "--output", str(out), "--quiet"]) == ExitCode.OK
    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"] and "truncated" in summary["warnings"][0].lower()
    rows = pq.read_table(out / "events").to_pylist()
    assert rows and rows[0]["api_name"] == "ApiVersions"


def test_show_filters_and_verbose(real_captures: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    src = next(p for p in real_captures if "sync-group" in p.name)
    assert main(["show", str(src), "--filter", "direction=request", "-v"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "SyncGroup" in out and "AssignedPartitions" in out and "zqy-topic1" in out
    assert "1 of 2 messages shown" in out
    assert main(["show", str(src), "--filter", "nonsense"]) == ExitCode.USAGE


def test_existing_output_is_not_mixed_in(tmp_path: Path, real_captures: list[Path]) -> None:
    src = str(real_captures[0])
    out = str(tmp_path / "o")
    assert main(["read", src, "--output", out, "--quiet"]) == ExitCode.OK
    assert main(["read", src, "--output", out, "--quiet"]) == ExitCode.USAGE
    first = len(pq.read_table(Path(out) / "events"))
    assert main(["read", src, "--output", out, "--quiet", "--append"]) == ExitCode.OK
    assert len(pq.read_table(Path(out) / "events")) == 2 * first
    assert main(["read", src, "--output", out, "--quiet", "--overwrite"]) == ExitCode.OK
    assert len(pq.read_table(Path(out) / "events")) == first


def test_capture_starting_mid_connection_decodes_orphan_response(tmp_path: Path) -> None:
    from tests.frames import api_versions_request_v0, api_versions_response_v0

    pcap = tmp_path / "mid.pcap"
    # No handshake, and the first request's packet is not in the capture.
    conversation(pcap, [("c", frame(metadata_request_v0(1, ["orders"]))),
                        ("b", frame(metadata_response_v0(1, [(2, "kafka-2", 9092)], ["orders"]))),
                        ("c", frame(api_versions_request_v0(2))),
                        ("b", frame(api_versions_response_v0(2, [(18, 0, 3), (3, 0, 12)])))],
                 handshake=False, drop={0})
    rows = _read(tmp_path, pcap)
    orphan = rows[0]
    assert orphan["direction"] == "response" and orphan["request_missing"]
    assert orphan["api_name"] == "Metadata" and orphan["decode_status"] == "ok"
    assert "3v0" in orphan["candidates"].split(",") and 0 < orphan["confidence"] <= 1
    assert json.loads(orphan["body"])["Brokers"][0]["Host"] == "kafka-2"
    # The broker side was recognised from content, and the next pair is matched normally.
    assert (rows[1]["api_name"], rows[1]["direction"], rows[2]["latency_ms"] is not None) == (
        "ApiVersions", "request", True)
    assert rows[1]["client_ip"] == "10.0.0.1"


def test_jobs_gives_the_same_rows_as_one_process(tmp_path: Path, real_captures: list[Path]) -> None:
    cols = ["capture", "direction", "api_key", "api_version", "correlation_id", "client_id", "decode_status", "body"]
    one = tmp_path / "one"
    many = tmp_path / "many"
    assert main(["read", *map(str, real_captures), "--output", str(one), "--quiet"]) == ExitCode.OK
    assert main(["read", *map(str, real_captures), "--output", str(many), "--quiet", "--jobs", "2"]) == ExitCode.OK
    a = sorted(tuple(str(r[c]) for c in cols) for r in pq.read_table(one / "events").to_pylist())
    b = sorted(tuple(str(r[c]) for c in cols) for r in pq.read_table(many / "events").to_pylist())
    assert a == b and a
    assert len({r["conn_id"] for r in pq.read_table(many / "events").to_pylist()}) == len(
        {r["conn_id"] for r in pq.read_table(one / "events").to_pylist()})
    summary = json.loads((many / "summary.json").read_text())
    assert summary["frames"] == len(a)


def test_non_kafka_tcp_is_counted_not_decoded(tmp_path: Path) -> None:
    http = Path(__file__).parents[1] / "fixtures" / "loopback-http.pcap"
    out = tmp_path / "o"
    assert main(["read", str(http), "--output", str(out), "--quiet"]) == ExitCode.OK
    assert pq.read_table(out / "events").num_rows == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["non_kafka_connections"] >= 1 and summary["non_kafka_bytes"] > 0
    assert summary["kafka_connections"] == 0


def test_show_verbose_prints_undecodable_frames_and_markup_in_client_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``show -v`` on a frame no layout decodes (no body: a batch of null bodies) followed by decodable ones, from
    a client whose id is rich markup (``[/]``, ``[bold red]``): every line printed, the id as it is."""
    pcap = tmp_path / "markup.pcap"
    undecodable = frame(b"\x7f\x7f" + b"\x00" * 6)  # api key 32639: no such api
    conversation(pcap, [
        ("c", undecodable),
        ("c", frame(metadata_request_v0(1, ["t"], client_id="[/]"))),
        ("b", frame(metadata_response_v0(1, [(1, "b1", 9092)], ["t"]))),
        ("c", frame(metadata_request_v0(2, ["[bold red]x[/]"], client_id="[bold red]x"))),
        ("b", frame(metadata_response_v0(2, [(1, "b1", 9092)], ["[bold red]x[/]"]))),
    ])
    assert main(["show", str(pcap), "-v"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "key 32639" in out
    assert "client=[/]" in out and "client=[bold red]x" in out
    assert '"[bold red]x[/]"' in out  # a body value, as it is
    assert "5 of 5 messages shown" in out


def test_show_prints_control_characters_in_traffic_strings_visibly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A client id and a topic holding a terminal escape, a bell, a bidirectional override and markup: printed
    as visible escapes, never raw, by ``show`` and ``show -v``."""
    pcap = tmp_path / "escapes.pcap"
    hostile = "evil\x1b[31mred\x07\u202e[/]"
    conversation(pcap, [
        ("c", frame(metadata_request_v0(1, [hostile], client_id=hostile))),
        ("b", frame(metadata_response_v0(1, [(1, "b1", 9092)], [hostile]))),
    ])
    for args in (["show", str(pcap)], ["show", str(pcap), "-v"]):
        assert main(args) == ExitCode.OK
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "client=evil\\x1b[31mred\\x07\\u202e[/]" in out
