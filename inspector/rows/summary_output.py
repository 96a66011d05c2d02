"""``summary.json``'s document and the summary table printed at the end of ``read`` and ``tap``.

``summary.json`` describes the whole dataset of its folder: its top-level counts are the totals of every run that
wrote events there (a ``read``, then each ``read --append``), and ``runs`` lists each run with its own counts,
which captures it read, when, and the event files it added. Counts, per-key counts, the accounting and the limit
hits add up over runs; warnings are all kept; an API's ``p50_ms``/``p99_ms`` are the one run's that measured its
latencies, and null in the totals when several runs did (each run's own are in ``runs``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from contract.text import visible
from inspector.rows.summary import LIMITS, Summary

if TYPE_CHECKING:
    from rich.console import Console


def summary_dict(summary: Summary) -> dict[str, Any]:
    issues = summary.stream_issues
    return {
        "packets": summary.packets,
        "packets_skipped": summary.packets_skipped,
        "frames": summary.frames,
        "messages": summary.messages,
        "decode_failures": summary.decode_failures,
        "decode_warnings": summary.decode_warnings,
        "stream_issue_bytes": issues,
        "kafka_connections": len(summary.connections) + summary.empty_connections,
        "kafka_connections_without_data": summary.empty_connections,
        "non_kafka_connections": summary.non_kafka_connections,
        "non_kafka_bytes": summary.non_kafka_bytes,
        "apis": summary.rows(),
        "accounting": summary.accounting(),
        "ignored_segments": summary.ignored(),
        "limits": {name: {"hits": hits, "meaning": LIMITS.get(name, "")}
                   for name, hits in sorted(summary.limits.items())},
        "warnings": summary.warnings,
    }


#: summary.json's counts that add up over runs, and its counts per key.
_ADDED = ("packets", "frames", "messages", "decode_failures", "decode_warnings", "kafka_connections",
          "kafka_connections_without_data", "non_kafka_connections", "non_kafka_bytes")
_ADDED_BY_KEY = ("packets_skipped", "stream_issue_bytes")
_API_COUNTS = ("requests", "responses", "errors", "decode_failures", "decode_warnings")


def run_dict(summary: Summary, *, started: str, captures: list[str], files: list[str]) -> dict[str, Any]:
    """One run's entry of ``summary.json``'s ``runs``: when, what it read, the event files it added, its counts."""
    return {"started": started, "captures": captures, "files": files, "max_conn_id": summary.max_conn_id,
            **summary_dict(summary)}


def dataset_dict(previous: dict[str, Any] | None, run: dict[str, Any]) -> dict[str, Any]:
    """``summary.json`` of a dataset: ``previous`` (its summary before this run, None for a new dataset) with
    ``run`` added. A summary written before runs were listed (or by ``tap``) is taken as one run."""
    runs: list[dict[str, Any]] = []
    if previous is not None:
        if isinstance(previous.get("runs"), list):
            runs = list(previous["runs"])
        else:
            earlier = {key: value for key, value in previous.items() if key != "runs"}
            earlier.setdefault("captures", sorted(k for k in previous.get("accounting", {}) if k != "*"))
            runs = [earlier]
    runs.append(run)
    return {**totals(runs), "runs": runs}


def totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The dataset's counts: those of ``runs`` (``summary_dict`` documents) added up."""
    doc: dict[str, Any] = {key: sum(int(run.get(key) or 0) for run in runs) for key in _ADDED}
    for key in _ADDED_BY_KEY:
        doc[key] = _add_by_key(run.get(key) or {} for run in runs)
    apis: dict[str, dict[str, Any]] = {}
    timed: dict[str, int] = {}
    for run in runs:
        for row in run.get("apis") or []:
            total = apis.setdefault(row["api"], {"api": row["api"], **dict.fromkeys(_API_COUNTS, 0),
                                                  "p50_ms": None, "p99_ms": None})
            for key in _API_COUNTS:
                total[key] += int(row.get(key) or 0)
            if row.get("p50_ms") is not None:
                timed[row["api"]] = timed.get(row["api"], 0) + 1
                total["p50_ms"], total["p99_ms"] = row["p50_ms"], row.get("p99_ms")
    for name, count in timed.items():
        if count > 1:  # latencies of several runs: their percentiles cannot be added up
            apis[name]["p50_ms"] = apis[name]["p99_ms"] = None
    accounting: dict[str, dict[str, int]] = {}
    for run in runs:
        for capture, counts in (run.get("accounting") or {}).items():
            into = accounting.setdefault(capture, {})
            for key, value in counts.items():
                into[key] = into.get(key, 0) + int(value or 0)
    hits = _add_by_key({name: entry.get("hits", 0) for name, entry in (run.get("limits") or {}).items()}
                       for run in runs)
    ignored: dict[str, dict[str, int]] = {}
    for run in runs:
        for reason, counts in (run.get("ignored_segments") or {}).items():
            into = ignored.setdefault(reason, {"segments": 0, "bytes": 0})
            for key in into:
                into[key] += int(counts.get(key) or 0)
    return {
        "packets": doc["packets"],
        "packets_skipped": doc["packets_skipped"],
        "frames": doc["frames"],
        "messages": doc["messages"],
        "decode_failures": doc["decode_failures"],
        "decode_warnings": doc["decode_warnings"],
        "stream_issue_bytes": doc["stream_issue_bytes"],
        "kafka_connections": doc["kafka_connections"],
        "kafka_connections_without_data": doc["kafka_connections_without_data"],
        "non_kafka_connections": doc["non_kafka_connections"],
        "non_kafka_bytes": doc["non_kafka_bytes"],
        "apis": [apis[name] for name in sorted(apis)],
        "accounting": accounting,
        "ignored_segments": ignored,
        "limits": {name: {"hits": count, "meaning": LIMITS.get(name, "")} for name, count in sorted(hits.items())},
        "warnings": [w for run in runs for w in run.get("warnings") or []],
        "max_conn_id": max((int(run.get("max_conn_id") or 0) for run in runs), default=0),
    }


def _add_by_key(dicts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for key, value in d.items():
            out[key] = out.get(key, 0) + int(value or 0)
    return out


def print_summary(console: Console, summary: Summary, elapsed: float) -> None:
    from rich.table import Table

    table = Table(title=f"Kafka traffic: {summary.frames:,} frames in {elapsed:.2f}s", title_justify="left")
    for col, justify in (("API", "left"), ("req", "right"), ("resp", "right"), ("errors", "right"),
                         ("p50 ms", "right"), ("p99 ms", "right"), ("undecoded", "right"),
                         ("trailing", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in summary.rows():
        table.add_row(
            escape_markup(row["api"]), f"{row['requests']:,}", f"{row['responses']:,}",
            f"[red]{row['errors']:,}[/]" if row["errors"] else "0",
            _ms(row["p50_ms"]), _ms(row["p99_ms"]),
            f"[red]{row['decode_failures']:,}[/]" if row["decode_failures"] else "0",
            f"[yellow]{row['decode_warnings']:,}[/]" if row["decode_warnings"] else "0",
        )
    console.print(table)
    seen = sum(c["bytes_seen"] for c in summary.connections)
    decoded = sum(c["bytes_decoded"] for c in summary.connections)
    gap = sum(c["bytes_gap"] for c in summary.connections)
    junk = sum(c["bytes_undecodable"] for c in summary.connections)
    encrypted = sum(c["bytes_encrypted"] for c in summary.connections)
    tls = sum(c["bytes_tls_overhead"] for c in summary.connections)
    console.print(
        f"{len(summary.connections) + summary.empty_connections} Kafka connections: {seen:,} bytes seen, "
        f"{decoded:,} decoded, "
        f"{gap:,} lost in gaps, {junk:,} undecodable"
        + (f", {encrypted:,} encrypted (TLS, not decrypted), {tls:,} TLS overhead" if encrypted or tls else "")
        + (f"; {summary.non_kafka_connections} other TCP connections ({summary.non_kafka_bytes:,} bytes) ignored"
           if summary.non_kafka_connections else "")
    )
    ignored = {reason: counts for reason, counts in summary.ignored().items() if counts["bytes"]}
    if ignored:  # data that reached no stream (segments without any are in summary.json only)
        segments = sum(c["segments"] for c in ignored.values())
        size = sum(c["bytes"] for c in ignored.values())
        console.print(f"[yellow]ignored:[/] {segments:,} TCP segments carrying {size:,} bytes that reached no stream ("
                      + ", ".join(f"{reason}: {c['segments']:,} segments, {c['bytes']:,} bytes"
                                  for reason, c in ignored.items())
                      + "); see summary.json ignored_segments", highlight=False, soft_wrap=True)
    print_notes(console, summary)


def print_notes(console: Console, summary: Summary) -> None:
    """What a person must know about what was read, whatever prints it (``read``, ``tap``, ``show``): the
    warnings (a truncated capture, a key log without secrets, ...), the limits hit, and why TLS traffic was
    not decoded."""
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {escape_markup(warning)}")
    for name, hits in sorted(summary.limits.items()):
        console.print(f"[yellow]limit {name}:[/] {hits:,} {LIMITS.get(name, 'hits')}", highlight=False)
    hint = tls_hint(summary)
    if hint is not None:
        console.print(f"[yellow]TLS:[/] {escape_markup(hint)}", highlight=False)


def tls_hint(summary: Summary) -> str | None:
    """One line for the TLS connections whose records were not decrypted, by why, with the fix; None when
    there are none."""
    hidden = [c for c in summary.connections if c.get("bytes_encrypted")]
    if not hidden:
        return None
    from inspector.tls.tls_events import NO_KEYS  # (the TLS modules load only where TLS was seen)

    why = Counter(str(c.get("tls_decryption")) for c in hidden)
    total = sum(c["bytes_encrypted"] for c in hidden)
    reasons = ", ".join(f"{reason} ×{n}" for reason, n in why.most_common())
    text = (f"{len(hidden)} TLS connection{'s' if len(hidden) != 1 else ''} not decrypted "
            f"({total:,} bytes encrypted; {reasons})")
    if NO_KEYS in why:
        text += ("; to decode them give --tls-keylog FILE, the key log (SSLKEYLOGFILE) their clients wrote "
                 "while connecting")
    return text


def escape_markup(text: str) -> str:
    """``text`` (from the traffic) shown as it is by rich: its control and invisible characters as visible
    escapes (``contract.text.visible``), its ``[...]`` not read as markup."""
    from rich.markup import escape

    return escape(visible(text))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
