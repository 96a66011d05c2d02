"""The report page and its charts, without Spark."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines import html, svg
from pipelines.plots import PlotData, bucket_seconds
from tests.pipelines.test_end_to_end import CHROMIUM, chromium


def finding(kind: str, severity: str, detail: str) -> dict[str, object]:
    t = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    return {"kind": kind, "severity": severity, "ts_first": t, "ts_last": t, "client": "192.0.2.1:5000",
            "broker": "198.51.100.1:9092", "group_id": None, "detail": detail,
            "subject": "s", "occurrences": 1,
            "evidence": [{"capture": "a.pcap", "conn_id": 3, "correlation_id": i} for i in range(7)]}


def plot_data() -> PlotData:
    return PlotData(events=10, requests=5, responses=5, connections=2, captures=["a.pcap"], ts_min=1.7e9,
                    ts_max=1.7e9 + 60, bucket_s=1, traffic={"Fetch": [(1.7e9, 3.0), (1.7e9 + 1, 4.0)]},
                    errors={}, latency=[("Fetch", "198.51.100.1:9092", 5, 0.5, 500.0)],
                    generations={"g": [(1.7e9, 1.0), (1.7e9 + 30, 2.0)]},
                    generation_labels={"g": ["gen 1: 1 member(s)", "gen 2: 2 member(s)"]},
                    members={"g": [(1.7e9, 1.0), (1.7e9 + 30, 2.0)]})


def test_page_escapes_and_summarises() -> None:
    page = html.render([finding("misrouted_api_versions", "error", "<script>alert(1)</script> & more"),
                        finding("latency_hotspot", "warning", "slow")], [], plot_data(), source="/tmp/ev")
    assert page.count("<script>") == 1 and "<script>alert" not in page  # the page's own script only
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert "http://" not in page and "https://" not in page
    assert page.count("'><span class=\"sev") == 2
    assert "id='summary'" in page and "+6 more" in page  # 7 evidence samples, the first's command shown
    assert "kafka-inspector show a.pcap --filter conn_id=3 --filter correlation_id=0" in page
    assert page.count("<svg") == 7 and "no data" in page  # no errors series


def test_nulls_and_hostile_strings_anywhere_in_a_finding() -> None:
    """A finding whose detail, kind or client is null, or holds markup, quotes and control characters."""
    hostile = '<img src=x onerror="alert(1)">\x1b[31m\'"[/]'
    odd = finding(None, "error", None) | {"client": hostile, "broker": None, "group_id": hostile}  # type: ignore[arg-type]
    page = html.render([odd, finding("k", "warning", hostile)], [], plot_data(), source=hostile)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "&#x27;" in page and page.count("'><span class=\"sev") == 2


def test_page_without_findings_says_so() -> None:
    page = html.render([], [], PlotData(), source="x")
    assert "id=\"no-findings\"" in page and "No admin writes" in page


def test_line_chart_draws_one_polyline_per_series() -> None:
    chart = svg.line_chart({"a": [(0, 1), (10, 5)], "b": [(0, 2), (5, 2), (10, 0)]}, "t", "n")
    assert chart.startswith("<svg") and chart.count("<polyline") == 2 and chart.count("<circle") == 5


def test_bar_chart_log_scale_handles_wide_ranges() -> None:
    chart = svg.bar_chart([("x", [0.05, 9000.0]), ("y", [1.0, 2.0])], ["p50", "p99"], "lat", "ms")
    assert chart.count("<rect") == 4 + 2  # bars + legend swatches
    assert "(log scale)" in chart


def test_bucket_seconds_keeps_about_a_hundred_points() -> None:
    assert bucket_seconds(30) == 1
    assert bucket_seconds(600) == 10
    assert bucket_seconds(86400) == 900


def test_clients_table_escapes_and_links_the_clients_findings() -> None:
    from contract.clients import build_clients

    hostile = '<img src=x onerror="alert(1)">'
    t = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    usage = [("192.0.2.1", hostile, None, "198.51.100.1:9092", "request", 0, "Produce", 2, 3, t, t, None, None, 3),
             ("192.0.2.2", "modern", "User:alice", "198.51.100.1:9092", "request", 18, "ApiVersions", 3, 1, t, t,
              "librdkafka", "2.16.0", 0)]
    clients = [c.row() for c in build_clients(usage, [("192.0.2.1", hostile, None, 59, 2)])]
    removed = finding("removed_in_kafka_4", "error", f"192.0.2.1 (client id {hostile}) sent 3 Produce request(s)")
    page = html.render([removed], [], plot_data(), source="x", clients=clients)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "Produce v2 ×3 (needs v3+)" in page and "MessageSet v0/v1 produced ×3" in page
    assert "<a href='#finding-0'>removed_in_kafka_4</a> ×1" in page and "<tr id='finding-0' " in page
    assert "UNKNOWN_PRODUCER_ID (59) ×2" in page and "librdkafka 2.16.0" in page and "<i>software unknown</i>" in page
    assert "<span class=none>ready</span>" in page


def test_controls_and_bidi_characters_are_escaped_as_the_terminal_shows_them() -> None:
    sneaky = "evil\u202egnp.exe\x1b[2J\u200b"
    page = html.render([finding("k", "error", f"client id {sneaky}") | {"client": sneaky, "subject": sneaky}], [],
                       plot_data(), source="x")
    assert "\u202e" not in page and "\x1b" not in page and "\u200b" not in page
    assert "evil\\u202egnp.exe\\x1b[2J\\u200b" in page


def test_long_values_are_cut_with_the_whole_on_hover() -> None:
    long_id = "x" * 5000
    page = html.render([finding("k", "error", "d") | {"client": long_id}], [], plot_data(), source="x")
    assert f"title='{long_id}'>{'x' * 60}…</span>" in page


def test_time_axis_cuts_idle_stretches() -> None:
    day = 86400.0
    series = {"a": [(0.0, 1.0), (1.0, 2.0), (2.0, 1.0), (3 * day, 4.0), (3 * day + 1, 1.0)]}
    chart = svg.line_chart(series, "t", "n")
    assert chart.count("without traffic</title>") == 1 and "2 d 23 h" in chart
    assert chart.count("<polyline") == 2  # no line across the break
    long_title = "word " * 60
    wrapped = svg.line_chart(series, long_title, "n", width=400)
    assert wrapped.count("<tspan") >= 3 and "…" in wrapped


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_ten_thousand_findings_make_a_page_of_a_few_mb_that_filters_without_the_network(tmp_path: Path) -> None:
    t = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    kinds = ("removed_in_kafka_4", "unadvertised_version", "error_hotspot", "misrouted_api_versions")
    many = [finding(kinds[i % 4], ("error", "warning", "info")[i % 3],
                    f"10.0.0.{i % 250} (client id app-{i}) sent {i % 9 + 1} Produce request(s) at v2 to "
                    "198.51.100.1:9092, removed in Kafka 4.0 (KIP-896: a Kafka 4 broker answers UNSUPPORTED_VERSION "
                    "or closes the connection): it must move to Produce v3 or later.")
            | {"ts_first": t + timedelta(seconds=i), "subject": f"10.0.0.1 client id app-{i}: Produce v2",
               "evidence": [{"capture": "a.pcap", "conn_id": i, "correlation_id": j} for j in range(50)]}
            for i in range(10_000)]
    page = html.render(many, [], plot_data(), source="/data/events")
    assert len(page.encode()) < 5_000_000
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    started = time.monotonic()
    dom = chromium(["--dump-dom", path.as_uri() + "#sev=warning&kind=error_hotspot"], tmp_path / "profile").stdout
    assert time.monotonic() - started < 60
    rows = re.findall(r"<tr id=\"finding-\d+\" data-sev=\"(\w+)\" data-kind=\"(\w+)\"( style=\"display: none;\")?",
                      dom)
    assert len(rows) == html.MAX_FINDING_ROWS
    shown = [(s, k) for s, k, hidden in rows if not hidden]
    assert shown and set(shown) == {("warning", "error_hotspot")}
    assert f"{len(shown)} of {len(rows)} shown" in dom
    for name, size in (("many-1400.png", "1400,1600"), ("many-phone.png", "390,1600")):
        chromium(["--hide-scrollbars", f"--window-size={size}", f"--screenshot={tmp_path / name}", path.as_uri()],
                 tmp_path / "profile")
        assert (tmp_path / name).stat().st_size > 20_000
