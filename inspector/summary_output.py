"""``summary.json``'s document and the summary table printed at the end of ``read`` and ``tap``."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from contract.text import visible
from inspector.summary import LIMITS, Summary

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
        "limits": {name: {"hits": hits, "meaning": LIMITS.get(name, "")}
                   for name, hits in sorted(summary.limits.items())},
        "warnings": summary.warnings,
    }


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
    from inspector.tls_events import NO_KEYS  # (the TLS modules load only where TLS was seen)

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
