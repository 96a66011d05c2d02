"""The topic map on the report page: producers → topics → consumer groups, as an inline SVG flow (no script) and a
table per topic (``topics.parquet``'s rows, ``contract/topic_map.py``).

The flow has three columns: on the left the producers (one node per client id: the addresses and principals of a
client id are one node, their count on hover), in the middle the topics, on the right the consumer groups (a
consumer without a group is a node of its own, by client id). A link's width grows with the records it carried
(the requests where no record was decoded). Nodes are ordered to keep links short: topics by name, producers and
groups by the mean position of their topics. With many nodes the picture grows taller, at a fixed pitch, and stays
readable (50 topics and 200 clients make a figure about 3,300 pixels high); beyond ``MAX_NODES`` a column keeps
its busiest nodes and says how many more ``topics.parquet`` has.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from contract.topic_map import CONSUMER, PRODUCER
from pipelines.escape import escape

#: Nodes a column of the flow shows at most (the busiest); the table lists every topic up to ``MAX_TOPIC_ROWS``.
MAX_NODES = 400
MAX_TOPIC_ROWS = 1000
PITCH = 16
WIDTH = 1180
COLUMNS_X = (10, 470, 870)  # where each column's nodes start
NODE_W = (300, 270, 300)
LABEL_CHARS = 42

Row = Mapping[str, Any]


def _weight(row: Row) -> int:
    return row["records"] if row["records"] is not None else row["requests"]


def _short(text: str, chars: int = LABEL_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _consumer_node(row: Row) -> str:
    return f"group {row['group_id']}" if row["group_id"] is not None else f"{row['client_id'] or '(no client id)'}"


class _Column:
    """A column's nodes: name -> (weight, tooltip lines)."""

    def __init__(self) -> None:
        self.weight: dict[str, int] = defaultdict(int)
        self.notes: dict[str, set[str]] = defaultdict(set)

    def add(self, name: str, weight: int, note: str) -> None:
        self.weight[name] += weight
        self.notes[name].add(note)

    def busiest(self, limit: int) -> list[str]:
        return sorted(self.weight, key=lambda n: (-self.weight[n], n))[:limit]


def _order(nodes: list[str], links: Mapping[tuple[str, str], int], topic_at: Mapping[str, int],
           left: bool) -> list[str]:
    """``nodes`` by the mean position of the topics they link to (then by name)."""
    spots: dict[str, list[int]] = defaultdict(list)
    for (a, b), _ in links.items():
        node, topic = (a, b) if left else (b, a)
        if topic in topic_at:
            spots[node].append(topic_at[topic])
    return sorted(nodes, key=lambda n: (sum(spots[n]) / len(spots[n]) if spots[n] else math.inf, n))


def flow(rows: Sequence[Row]) -> str:
    """The producers → topics → consumer groups figure of the topic map's rows."""
    producers, topics, groups = _Column(), _Column(), _Column()
    produced: dict[tuple[str, str], int] = defaultdict(int)  # (producer, topic) -> weight
    consumed: dict[tuple[str, str], int] = defaultdict(int)  # (topic, group) -> weight
    for r in rows:
        who = f"{r['client_ip']} {r['principal'] or ''}".strip()
        weight = max(_weight(r), 1)
        topics.add(r["topic"], weight, f"{r['role']} {r['client_id']} ({who})")
        if r["role"] == PRODUCER:
            name = r["client_id"] or "(no client id)"
            producers.add(name, weight, who)
            produced[(name, r["topic"])] += weight
        elif r["role"] == CONSUMER:
            name = _consumer_node(r)
            groups.add(name, weight, f"{r['client_id']} ({who})")
            consumed[(r["topic"], name)] += weight
    if not topics.weight:
        return "<p class='note' id='no-topic-map'>No Produce, Fetch or ShareFetch requests in this traffic.</p>"
    shown_topics = sorted(topics.busiest(MAX_NODES))
    topic_at = {t: i for i, t in enumerate(shown_topics)}
    left = _order(producers.busiest(MAX_NODES), produced, topic_at, True)
    right = _order(groups.busiest(MAX_NODES), consumed, topic_at, False)
    columns = (left, shown_topics, right)
    tall = max(len(c) for c in columns)
    top = 46
    height = top + tall * PITCH + 30
    y: list[dict[str, float]] = []
    for nodes in columns:
        offset = top + (tall - len(nodes)) * PITCH / 2
        y.append({n: offset + i * PITCH for i, n in enumerate(nodes)})
    heaviest = max([*produced.values(), *consumed.values(), 1])
    parts = [f'<svg class="chart topic-map" id="topic-map-flow" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
             f'height="{height}" role="img" aria-label="producers, topics and consumer groups">',
             f'<text x="{COLUMNS_X[0]}" y="18" class="title">Producers → topics → consumer groups</text>',
             f'<text x="{COLUMNS_X[0]}" y="36" class="pl">producers (client id): {len(producers.weight)}</text>',
             f'<text x="{COLUMNS_X[1]}" y="36" class="pl">topics: {len(topics.weight)}</text>',
             f'<text x="{COLUMNS_X[2]}" y="36" class="pl">consumer groups (or consumers without one): '
             f'{len(groups.weight)}</text>']
    links = [(0, "#1f77b4", a, b, w) for (a, b), w in produced.items()]
    links += [(1, "#2ca02c", a, b, w) for (a, b), w in consumed.items()]
    for col_a, color, a, b, weight in links:
        col_b = col_a + 1
        if a not in y[col_a] or b not in y[col_b]:
            continue
        x1, y1 = COLUMNS_X[col_a] + NODE_W[col_a], y[col_a][a] + 6
        x2, y2 = COLUMNS_X[col_b], y[col_b][b] + 6
        mid = (x1 + x2) / 2
        stroke = 1 + 5 * math.sqrt(weight / heaviest)
        parts.append(f'<path d="M{x1:.0f},{y1:.1f} C{mid:.0f},{y1:.1f} {mid:.0f},{y2:.1f} {x2:.0f},{y2:.1f}" '
                     f'fill="none" stroke="{color}" stroke-opacity="0.45" stroke-width="{stroke:.1f}">'
                     f'<title>{escape(a)} → {escape(b)}: {weight:,}</title></path>')
    fills = ("#dbe9f6", "#fdf0d5", "#dff2df")
    for col, (nodes, column) in enumerate(zip(columns, (producers, topics, groups), strict=True)):
        for n in nodes:
            notes = sorted(column.notes[n])
            tip = f"{n}: {column.weight[n]:,}\n" + "\n".join(notes[:12]) + (
                f"\n+{len(notes) - 12} more" if len(notes) > 12 else "")
            parts.append(f'<g><title>{escape(tip)}</title><rect x="{COLUMNS_X[col]}" y="{y[col][n]:.1f}" '
                         f'width="{NODE_W[col]}" height="{PITCH - 3}" rx="3" fill="{fills[col]}" stroke="#9aa5b5"/>'
                         f'<text x="{COLUMNS_X[col] + 5}" y="{y[col][n] + 10:.1f}" class="bl">{escape(_short(n))}'
                         f'</text></g>')
    for col, column in enumerate((producers, topics, groups)):
        hidden = len(column.weight) - len(columns[col])
        if hidden > 0:
            parts.append(f'<text x="{COLUMNS_X[col]}" y="{height - 10}" class="pl">+{hidden} more in '
                         f'topics.parquet</text>')
    parts.append("</svg>")
    return "".join(parts)


def _amount(rows: Sequence[Row]) -> str:
    records = [r["records"] for r in rows if r["records"] is not None]
    requests = sum(r["requests"] for r in rows)
    return (f"{sum(records):,} records" if records else "records not decoded") + f", {requests:,} requests"


def topic_table(rows: Sequence[Row]) -> str:
    """One line per topic: who produces to it, which groups (and consumers without one) consume it."""
    by_topic: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_topic[r["topic"]].append(r)
    lines = []
    for topic in sorted(by_topic)[:MAX_TOPIC_ROWS]:
        mine = by_topic[topic]
        prod = [r for r in mine if r["role"] == PRODUCER]
        cons = [r for r in mine if r["role"] == CONSUMER]
        producer_ids = sorted({r["client_id"] or "(no client id)" for r in prod})
        consumers: dict[str, set[str]] = defaultdict(set)
        for r in cons:
            consumers[_consumer_node(r)].add(r["client_id"] or "(no client id)")
        who = "<br>".join(f"{escape(g)} ({escape(', '.join(sorted(ids)))})" for g, ids in sorted(consumers.items()))
        lines.append(f"<tr><td class='mono'>{escape(topic)}</td>"
                     f"<td class='mono'>{escape(', '.join(producer_ids))}</td><td>{_amount(prod) if prod else ''}</td>"
                     f"<td class='mono'>{who}</td><td>{_amount(cons) if cons else ''}</td></tr>")
    more = (f"<p class='note'>{len(by_topic) - MAX_TOPIC_ROWS} more topics are in topics.parquet.</p>"
            if len(by_topic) > MAX_TOPIC_ROWS else "")
    return ("<table id='topic-map'><thead><tr><th>topic</th><th>producers (client id)</th><th>produced</th>"
            "<th>consumed by (group: client ids)</th><th>fetched</th></tr></thead><tbody>" + "".join(lines)
            + "</tbody></table>" + more)


def topic_map_section(rows: Sequence[Row]) -> str:
    """The page's topic map: the flow, then the table."""
    if not rows:
        return "<p class='note' id='no-topic-map'>No Produce, Fetch or ShareFetch requests in this traffic.</p>"
    return flow(rows) + topic_table(rows)
