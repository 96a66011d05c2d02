"""The topic map on the report page (pipelines/topic_map_html.py), without Spark: escaped, and readable at 50
topics and 200 clients (every node at a fixed pitch, links to the right nodes), capped beyond ``MAX_NODES``."""

from __future__ import annotations

import re
from typing import Any

from pipelines import html, topic_map_html
from pipelines.plots import PlotData


def row(topic: str, role: str, client_id: str, group: str | None = None, records: int | None = 10,
        requests: int = 3) -> dict[str, Any]:
    return {"topic": topic, "role": role, "client_ip": "192.0.2.7", "client_id": client_id, "principal": None,
            "software_name": None, "software_version": None, "group_id": group, "first_seen": None,
            "last_seen": None, "requests": requests, "record_bytes": None if records is None else records * 100,
            "records": records, "brokers": ["198.51.100.1:9092"]}


def test_hostile_names_are_text() -> None:
    rows = [row("<script>x</script>", "producer", "p&q"), row("<script>x</script>", "consumer", "c'1", "g\"1")]
    page = html.render([], [], PlotData(), source="x", topics=rows)
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page and "p&amp;q" in page
    assert "group g&quot;1" in page and "id='topic-map'" in page and 'id="topic-map-flow"' in page


def test_no_traffic_says_so() -> None:
    assert "no-topic-map" in html.render([], [], PlotData(), source="x")


def test_fifty_topics_and_two_hundred_clients() -> None:
    topics = [f"orders.region-{i:02d}" for i in range(50)]
    rows = [row(topics[c % 50], "producer", f"producer-{c:03d}") for c in range(120)]
    rows += [row(topics[(c * 7) % 50], "consumer", f"consumer-{c:03d}", f"group-{c % 30:02d}" if c % 8 else None)
             for c in range(80)]
    svg = topic_map_html.flow(rows)
    assert svg.count("<rect") == 120 + 50 + (30 + 10)  # each producer, topic, group and groupless consumer once
    height = int(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert height == 46 + 120 * topic_map_html.PITCH + 30  # the tallest column at the pitch: nothing squeezed
    consumed = {(c * 7 % 50, f"group-{c % 30:02d}" if c % 8 else f"consumer-{c:03d}") for c in range(80)}
    assert svg.count("<path") == 120 + len(consumed)  # a link per producer and topic, per topic and group
    labels = re.findall(r'class="bl">([^<]*)</text>', svg)
    assert "producer-000" in labels and "orders.region-49" in labels and "group group-29" in labels
    assert "consumer-000" in labels  # a consumer without a group is a node of its own


def test_beyond_the_cap_the_busiest_nodes_and_a_note() -> None:
    rows = [row("t", "producer", f"p-{c:04d}", records=c + 1) for c in range(topic_map_html.MAX_NODES + 5)]
    svg = topic_map_html.flow(rows)
    labels = re.findall(r'class="bl">([^<]*)</text>', svg)
    assert "+5 more in topics.parquet" in svg and len(labels) == topic_map_html.MAX_NODES + 1
    assert "p-0000" not in labels and f"p-{topic_map_html.MAX_NODES + 4:04d}" in labels
