"""The tap's metrics model (``inspector.tap.metrics``) and its rendering (``inspector.tap.metrics_http``), without a
capture.

Real captures go through the tap's decoder (``TapDecoder``, as the tap feeds it) and the model; the expected values
come from the events table and the summary directly (pyarrow, collections.Counter, ``contract.apis``' table), and
the exposition is read back with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import argparse
import socket
import urllib.request
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from contract.apis import REMOVED_VERSIONS
from contract.clients import old_record_format
from contract.kafka import error_name
from decoders.status import StatusKind
from inspector.read.decode_options import read_options
from inspector.tap.command import add_parser
from inspector.tap.decode import TapDecoder
from inspector.tap.metrics import LATENCY_BUCKETS, MAX_LABEL_LENGTH, OTHER, LabelCap, TapMetrics, label_text
from inspector.tap.metrics_http import MetricsServer, parse_address, render

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["tap", *argv])


def _decode(name: str) -> tuple[TapDecoder, pa.RecordBatch]:
    decoder = TapDecoder(read_options(_args("-i", "lo", "-o", "out")), "tap:lo")
    decoder.feed((PCAPS / name).read_bytes())
    decoder.end_stream()
    decoder.finish(decoder.stream_ts)
    batch = decoder.take()
    assert batch is not None
    return decoder, batch


def _scrape(metrics: TapMetrics) -> dict[str, list]:
    """The model's families as the server writes them, parsed back: family name -> samples."""
    class Registry:
        def collect(self):  # noqa: ANN202
            return render(metrics.snapshot())

    text = generate_latest(Registry()).decode()  # type: ignore[arg-type]
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def _values(samples: list, name: str, *labels: str) -> Counter[tuple[str, ...]]:
    out: Counter[tuple[str, ...]] = Counter()
    for s in samples:
        if s.name == name:
            out[tuple(s.labels[label] for label in labels)] += s.value
    return out


@pytest.mark.parametrize("name", ["tansu-consumer-group-3-members.pcap",
                                  "tansu-kafka-python-0.10-removed-versions.pcap", "tansu-admin-operations.pcap",
                                  "mock-cluster-3-brokers-multi-client.pcap"])
def test_counts_equal_the_events_and_the_summary(name: str) -> None:
    decoder, batch = _decode(name)
    metrics = TapMetrics()
    for piece in (batch.slice(0, 100), batch.slice(100)):  # as the tap writes them: batch after batch
        metrics.add_batch(piece)
    metrics.add_failures(decoder.take_failures())
    metrics.set_bytes(decoder.byte_totals())
    got = _scrape(metrics)
    rows = batch.to_pylist()

    def api(r: dict) -> str:
        return r["api_name"] or ("unknown" if r["api_key"] is None else f"key {r['api_key']}")

    requests = Counter((api(r), str(r["api_version"]), r["client_id"] or "") for r in rows
                       if r["direction"] == "request")
    assert _values(got["kafka_inspector_requests"], "kafka_inspector_requests_total", "api", "version",
                   "client_id") == requests
    responses = Counter((api(r), error_name(r["error_code"] or 0)) for r in rows if r["direction"] == "response")
    assert _values(got["kafka_inspector_responses"], "kafka_inspector_responses_total", "api", "error") == responses
    # The histogram: per API, every timed response in the +Inf bucket and the count, each in its bucket.
    hist = got["kafka_inspector_request_latency_seconds"]
    timed = [r for r in rows if r["direction"] == "response" and r["latency_ms"] is not None]
    assert _values(hist, "kafka_inspector_request_latency_seconds_count", "api") == Counter(
        (api(r),) for r in timed)
    for le in (*LATENCY_BUCKETS, float("inf")):
        expected = Counter(api(r) for r in timed if r["latency_ms"] / 1000 <= le)
        bucket = Counter({k[0]: v for k, v in _values(hist, "kafka_inspector_request_latency_seconds_bucket", "api",
                                                      "le").items() if float(k[1]) == le})
        assert +bucket == expected, le
    sums = _values(hist, "kafka_inspector_request_latency_seconds_sum", "api")
    for key in {api(r) for r in timed}:
        assert sums[(key,)] == pytest.approx(sum(r["latency_ms"] / 1000 for r in timed if api(r) == key))
    # Decode failures: as many as the summary counted, per API.
    failures = _values(got.get("kafka_inspector_decode_failures", []), "kafka_inspector_decode_failures_total", "api")
    assert failures == +Counter({(n,): s.decode_failures for n, s in decoder.summary.apis.items()})
    # Bytes: the summary's accounting of the (now closed) connections, per side.
    accounting = decoder.summary.accounting().get("*", {})
    by_kind = _values(got["kafka_inspector_bytes"], "kafka_inspector_bytes_total", "kind")
    for kind in ("decoded", "gap", "undecodable", "encrypted", "tls_overhead"):
        assert by_kind[(kind,)] == accounting.get(f"bytes_{kind}", 0)
    # Requests at versions Kafka 4.0 removed, from contract.apis' table.
    removed = Counter((r["client_id"] or "", api(r), str(r["api_version"])) for r in rows
                      if r["direction"] == "request" and r["api_key"] in REMOVED_VERSIONS
                      and REMOVED_VERSIONS[r["api_key"]][0] <= r["api_version"] <= REMOVED_VERSIONS[r["api_key"]][1])
    assert _values(got.get("kafka_inspector_clients_removed_versions", []), "kafka_inspector_clients_removed_versions",
                   "client_id", "api", "version") == removed
    # Record sets in message format v0/v1, as the client inventory decides it.
    old = Counter((r["client_id"] or "", api(r)) for r in rows
                  if old_record_format(r["api_key"], r["direction"], r["body"]))
    assert _values(got.get("kafka_inspector_clients_old_message_format", []),
                   "kafka_inspector_clients_old_message_format", "client_id", "api") == old
    if name.startswith("tansu-kafka-python-0.10"):
        assert removed and old  # the capture's point


def test_decode_failures_by_status_kind() -> None:
    decoder, _ = _decode("tansu-admin-operations.pcap")
    failures = decoder.take_failures()
    assert sum(failures.values()) == decoder.summary.decode_failures == 2
    assert all(isinstance(kind, StatusKind) and kind is not StatusKind.OK for _, _, kind in failures)
    assert decoder.take_failures() == {}  # taken
    metrics = TapMetrics()
    metrics.add_failures(failures)
    got = _scrape(metrics)
    kinds = _values(got["kafka_inspector_decode_failures"], "kafka_inspector_decode_failures_total", "status_kind")
    assert sum(kinds.values()) == 2 and {k for (k,) in kinds} <= {k.name.lower() for k in StatusKind}


def test_open_connections_count_in_the_bytes() -> None:
    """Before the connections close, their bytes so far are counted; after, the same totals as the summary's."""
    decoder = TapDecoder(read_options(_args("-i", "lo", "-o", "out")), "tap:lo")
    raw = (PCAPS / "tansu-consumer-group-3-members.pcap").read_bytes()
    decoder.feed(raw[:len(raw) // 2])
    open_now = decoder.byte_totals()
    assert decoder.inspector.conns and open_now["client_bytes_decoded"] > 0
    decoder.feed(raw[len(raw) // 2:])
    decoder.end_stream()
    decoder.finish(decoder.stream_ts)
    closed = decoder.byte_totals()
    accounting = decoder.summary.accounting()["*"]
    assert closed["client_bytes_decoded"] + closed["broker_bytes_decoded"] == accounting["bytes_decoded"]
    assert all(closed[k] >= v for k, v in open_now.items())


def test_counters_never_go_back() -> None:
    metrics = TapMetrics()
    metrics.set_bytes({"client_bytes_undecodable": 500})
    metrics.set_bytes({"client_bytes_undecodable": 100})  # an incomplete TLS record completed meanwhile
    metrics.set_capture(packets=10, kernel_dropped=None, open_connections=3, outages=0, last_packet_ts=None)
    metrics.set_capture(packets=5, kernel_dropped=2, open_connections=1, outages=1, last_packet_ts=1.5e9)
    got = _scrape(metrics)
    assert _values(got["kafka_inspector_bytes"], "kafka_inspector_bytes_total", "direction", "kind")[
        ("client", "undecodable")] == 500
    assert _values(got["kafka_inspector_bytes"], "kafka_inspector_bytes_total", "direction", "kind")[
        ("broker", "gap")] == 0  # exported as 0, not missing
    assert got["kafka_inspector_packets"][0].value == 10 and got["kafka_inspector_kernel_drops"][0].value == 2
    assert got["kafka_inspector_connections_open"][0].value == 1  # a gauge follows
    assert got["kafka_inspector_last_packet_timestamp_seconds"][0].value == 1.5e9


def _api_versions_batch(client_ids: list[str | None]) -> pa.RecordBatch:
    """ApiVersions v0 requests with these client ids, as a real capture's first request row carries them."""
    _, batch = _decode("tansu-consumer-group-3-members.pcap")
    rows = batch.to_pylist()
    first = next(r for r in rows if r["direction"] == "request")
    return pa.RecordBatch.from_pylist([{**first, "client_id": cid} for cid in client_ids], schema=batch.schema)


def test_client_ids_beyond_the_cap_fold_into_other() -> None:
    metrics = TapMetrics(max_values=10)
    ids = [f"client-{i}" for i in range(25)]
    metrics.add_batch(_api_versions_batch(ids))
    metrics.add_batch(_api_versions_batch(ids[:3] + ["late-1", "late-2"]))
    got = _scrape(metrics)
    per_client = _values(got["kafka_inspector_requests"], "kafka_inspector_requests_total", "client_id")
    assert len(per_client) == 11 and per_client[(OTHER,)] == 15 + 2
    assert per_client[("client-0",)] == 2  # a value kept stays kept
    assert sum(per_client.values()) == 30
    folded = _values(got["kafka_inspector_label_values_folded"], "kafka_inspector_label_values_folded_total", "label")
    assert folded[("client_id",)] > 0
    # API and error names Kafka defines are never folded, whatever came first.
    cap = LabelCap(2, always=["Produce", "Fetch"])
    assert [cap(v) for v in ("x", "y", "z", "Produce", "Fetch")] == ["x", "y", OTHER, "Produce", "Fetch"]


HOSTILE = {
    "new\nline": "new\\x0aline",
    'quo"te': 'quo"te',
    "back\\slash": "back\\slash",
    "\x1b[31mred\x1b[0m": "\\x1b[31mred\\x1b[0m",
    "nul\x00byte": "nul\\x00byte",
    "\u202eevil": "\\u202eevil",
    "bad utf8 \\xff\\xfe": "bad utf8 \\xff\\xfe",  # what the decoder makes of invalid UTF-8 (backslashreplace)
    "crlf\r\n": "crlf\\x0d\\x0a",
    "x" * 300: "x" * MAX_LABEL_LENGTH,
    "über-client ✓": "über-client ✓",
}


def test_hostile_client_ids_are_escaped_and_parse_back() -> None:
    metrics = TapMetrics()
    metrics.add_batch(_api_versions_batch(list(HOSTILE)))
    text = generate_latest(type("R", (), {"collect": lambda self: render(metrics.snapshot())})()).decode()
    assert "\x1b" not in text and "\x00" not in text and "\u202e" not in text and "\r" not in text
    got = {f.name: f.samples for f in text_string_to_metric_families(text)}
    per_client = _values(got["kafka_inspector_requests"], "kafka_inspector_requests_total", "client_id")
    assert per_client == Counter({(shown,): 1 for shown in HOSTILE.values()})
    assert label_text("\ud800lone") == "\\ud800lone"  # a lone surrogate would not encode as UTF-8


def test_metrics_address() -> None:
    assert parse_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_address(":9464") == ("0.0.0.0", 9464)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    assert parse_address("localhost:0") == ("localhost", 0)
    for bad in ("9464", "host:", "host:99999", "a:b:9464", ""):
        with pytest.raises(ValueError, match="HOST:PORT"):
            parse_address(bad)


def test_server_serves_the_last_snapshot_and_names_a_busy_port() -> None:
    server = MetricsServer("127.0.0.1", 0)
    server.start()
    try:
        host, port = server.address
        metrics = TapMetrics()
        metrics.set_capture(packets=7, kernel_dropped=0, open_connections=2, outages=0, last_packet_ts=None)
        server.publish(metrics.snapshot())
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["kafka_inspector_packets"].samples[0].value == 7
        assert "process_cpu_seconds" in families  # the process's own metrics come along
        busy = MetricsServer("127.0.0.1", port)
        with pytest.raises(OSError, match=f"cannot serve metrics on 127.0.0.1:{port}: .*EADDRINUSE"):
            busy.start()
    finally:
        server.stop()
    with pytest.raises(OSError), socket.create_connection((host, port), timeout=2):
        pass


def test_grafana_dashboard_uses_the_exported_names() -> None:
    """docs/grafana/kafka-inspector.json queries only families the tap exports (and the process's own)."""
    import json
    import re

    from inspector.tap.metrics import SPECS, Kind

    dashboard = json.loads((REPO / "docs" / "grafana" / "kafka-inspector.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exported = set()
    for name, spec in SPECS.items():
        exported |= ({f"{name}_bucket", f"{name}_count", f"{name}_sum"} if spec.kind is Kind.HISTOGRAM else {name})
    used = {m for e in exprs for m in re.findall(r"\b(kafka_inspector_\w+|process_\w+)", e)}
    assert used - exported == {"process_cpu_seconds_total"}
    # every family but the bookkeeping ones has a panel
    assert {n for n in SPECS if not any(n in u for u in used)} <= {"kafka_inspector_interface_outages_total"}
