"""The live terminal view of ``kafka-inspector tap`` (rich): rates, top APIs, errors, latency, drops.

Two parts, both free of I/O except :meth:`LiveView.start`/:meth:`LiveView.stop`:

* :class:`LiveStats` aggregates the event batches the tap writes (about one a second): requests and
  responses per API, error codes, recent latencies per API, consumer groups seen;
* :class:`LiveView` renders those together with the tap's counters (:class:`TapCounters`: packets,
  bytes, Kafka frames, kernel drops, decode failures, gaps, files, interface outages) and its ``state``
  (``capturing``, ``INTERFACE DOWN ...: waiting``, ``stopping ...``), and computes rates between two
  refreshes. It is refreshed by the caller (``auto_refresh=False``): no thread of its own.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from contract.kafka import error_name
from contract.text import visible
from inspector.rows.summary import percentile

#: Latencies kept per API for the live p50/p99 (the most recent ones).
LATENCY_WINDOW = 2048
#: Rows of the API table.
TOP_APIS = 12
TOP_ERRORS = 8



@dataclass
class _ApiLive:
    requests: int = 0
    responses: int = 0
    errors: int = 0
    decode_failures: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))


class LiveStats:
    """Running view-side totals, fed with the event batches (``inspector.rows.event_table.SCHEMA``) as written."""

    def __init__(self) -> None:
        self.apis: dict[str, _ApiLive] = {}
        self.errors: Counter[tuple[str, int]] = Counter()  # (api, error code) -> responses
        self.groups: Counter[str] = Counter()  # group id -> messages naming it
        self.rows = 0

    def add_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self.rows += batch.num_rows
        cols = {name: batch.column(name).to_pylist() for name in (
            "api_name", "api_key", "direction", "error_code", "nested_error_codes", "latency_ms", "group_id",
            "decode_status")}
        # A decode failure has no body (as Summary counts them); a body with a status decoded with trailing bytes.
        no_body = batch.column("body").is_null().to_pylist()
        for name, key, direction, code, nested, latency, group, status, failed in zip(
                cols["api_name"], cols["api_key"], cols["direction"], cols["error_code"],
                cols["nested_error_codes"], cols["latency_ms"], cols["group_id"], cols["decode_status"], no_body,
                strict=True):
            api = name or ("unknown" if key is None else f"key {key}")
            st = self.apis.get(api)
            if st is None:
                st = self.apis[api] = _ApiLive()
            if direction == "request":
                st.requests += 1
            else:
                st.responses += 1
                if latency is not None:
                    st.latencies.append(latency)
                if code:
                    st.errors += 1
                    self.errors[(api, code)] += 1
                for inner in nested or ():
                    self.errors[(api, inner)] += 1
            if status != "ok" and failed:
                st.decode_failures += 1
            if group:
                self.groups[group] += 1


@dataclass
class TapCounters:
    """Cumulative counters of a running tap (a snapshot is handed to :meth:`LiveView.refresh`)."""

    packets: int = 0
    wire_bytes: int = 0
    frames: int = 0
    messages: int = 0
    decode_failures: int = 0
    decode_warnings: int = 0
    gap_bytes: int = 0
    skipped_bytes: int = 0
    kernel_dropped: int | None = None  # None until tcpdump reported its counters once
    interface_dropped: int = 0
    received_by_filter: int | None = None
    files_written: int = 0
    last_file: str = ""
    events_in_current_file: int = 0
    open_connections: int = 0  # recognised as Kafka
    other_connections: int = 0  # other TCP connections the capture filter lets through (or not recognised yet)
    outages: int = 0  # times the capture interface went down or disappeared
    outage_seconds: float = 0.0


def _si(value: float, unit: str = "") -> str:
    for threshold, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= threshold:
            return f"{value / threshold:.1f} {suffix}{unit}"
    return f"{value:.0f} {unit}".rstrip()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


class LiveView:
    """A rich.live panel refreshed by the tap about once a second."""

    def __init__(self, console: Console, *, interface: str, bpf: str, output: Path) -> None:
        self.console = console
        self.interface = interface
        self.bpf = bpf
        self.output = output
        self.started = time.monotonic()
        self._prev: tuple[float, TapCounters, dict[str, int]] | None = None
        self._rates: dict[str, float] = {}
        self._api_rates: dict[str, float] = {}
        self._live: Live | None = None
        self.state = "capturing"

    def start(self) -> None:
        self._live = Live(console=self.console, auto_refresh=False, transient=False,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
            if not self.console.is_terminal:
                self.console.line()  # the final render printed to a file or pipe ends without a newline

    def refresh(self, counters: TapCounters, stats: LiveStats, now: float | None = None) -> None:
        self.update_rates(counters, stats, now)
        if self._live is not None:
            self._live.update(self.render(counters, stats), refresh=True)

    def update_rates(self, counters: TapCounters, stats: LiveStats, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        requests = {name: st.requests for name, st in stats.apis.items()}
        if self._prev is not None:
            then, before, before_req = self._prev
            dt = now - then
            if dt > 0:
                self._rates = {
                    "packets": (counters.packets - before.packets) / dt,
                    "bytes": (counters.wire_bytes - before.wire_bytes) / dt,
                    "frames": (counters.frames - before.frames) / dt,
                }
                self._api_rates = {name: (n - before_req.get(name, 0)) / dt for name, n in requests.items()}
        self._prev = (now, replace(counters), requests)

    def render(self, c: TapCounters, stats: LiveStats) -> RenderableType:
        elapsed = int(time.monotonic() - self.started)
        r = self._rates
        head = Text.assemble(
            ("Kafka tap ", "bold"), (self.interface, "bold cyan"), f"  filter: {self.bpf}  → {self.output}  ",
            (f"{elapsed // 3600:02d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}", "dim"), "  ",
            (self.state, "bold red" if self.state.startswith("INTERFACE DOWN") else ""),
        )
        drops: Text
        if c.kernel_dropped is None:
            drops = Text("kernel drops: (waiting for tcpdump)", style="dim")
        elif c.kernel_dropped or c.interface_dropped:
            drops = Text(f"kernel drops: {c.kernel_dropped:,}"
                         + (f" (+{c.interface_dropped:,} by interface)" if c.interface_dropped else "")
                         + " — streams have gaps; raise --buffer", style="bold red")
        else:
            drops = Text(f"kernel drops: 0 (of {c.received_by_filter or 0:,} received by filter)", style="green")
        line1 = Text(
            f"packets {c.packets:,} ({_si(r.get('packets', 0.0))}/s)   bytes {_si(c.wire_bytes, 'B')} "
            f"({_si(r.get('bytes', 0.0), 'B')}/s)   Kafka frames {c.frames:,} ({_si(r.get('frames', 0.0))}/s)   "
            f"Kafka connections open {c.open_connections:,}"
            + (f" (+{c.other_connections:,} other TCP)" if c.other_connections else ""))
        line2 = Text.assemble(
            drops, "   ",
            (f"decode failures {c.decode_failures:,}", "red" if c.decode_failures else ""), "   ",
            (f"trailing {c.decode_warnings:,}", "yellow" if c.decode_warnings else ""), "   ",
            (f"gaps {_si(c.gap_bytes, 'B')}", "red" if c.gap_bytes else ""), "   ",
            (f"skipped {_si(c.skipped_bytes, 'B')}", "yellow" if c.skipped_bytes else ""),
        )
        line3 = Text(f"files written {c.files_written:,}" + (f" (last {c.last_file})" if c.last_file else "")
                     + f"   events {c.messages:,} ({c.events_in_current_file:,} in the open file)", style="dim")
        if c.outages:
            line3.append(f"   interface outages {c.outages:,} ({c.outage_seconds:.0f}s down)", style="yellow")

        apis = Table(title="top APIs", title_justify="left", expand=False, pad_edge=False)
        for col, justify in (("API", "left"), ("req/s", "right"), ("requests", "right"), ("responses", "right"),
                             ("errors", "right"), ("p50 ms", "right"), ("p99 ms", "right"), ("undecoded", "right")):
            apis.add_column(col, justify=justify)  # type: ignore[arg-type]
        ranked = sorted(stats.apis.items(), key=lambda kv: (-kv[1].requests - kv[1].responses, kv[0]))
        for name, st in ranked[:TOP_APIS]:
            lat = list(st.latencies)
            apis.add_row(
                name, f"{self._api_rates.get(name, 0.0):,.1f}", f"{st.requests:,}", f"{st.responses:,}",
                f"[red]{st.errors:,}[/]" if st.errors else "0",
                _ms(percentile(lat, 0.5)), _ms(percentile(lat, 0.99)),
                f"[red]{st.decode_failures:,}[/]" if st.decode_failures else "0",
            )
        if len(ranked) > TOP_APIS:
            apis.caption = f"+{len(ranked) - TOP_APIS} more APIs"

        parts: list[RenderableType] = [head, line1, line2, line3, apis]
        if stats.errors:
            errors = Table(title="error codes", title_justify="left", pad_edge=False)
            for col, justify in (("API", "left"), ("code", "right"), ("name", "left"), ("responses", "right")):
                errors.add_column(col, justify=justify)  # type: ignore[arg-type]
            for (api, code), n in stats.errors.most_common(TOP_ERRORS):
                errors.add_row(api, str(code), error_name(code), f"{n:,}")
            parts.append(errors)
        if stats.groups:
            names = ", ".join(visible(g) for g, _ in stats.groups.most_common(8))
            more = f" (+{len(stats.groups) - 8} more)" if len(stats.groups) > 8 else ""
            parts.append(Text(f"groups seen ({len(stats.groups)}): {names}{more}"))
        parts.append(Text("latency: p50/p99 of the last "
                          f"{LATENCY_WINDOW} responses per API; Ctrl-C stops (the open file is completed)",
                          style="dim"))
        return Group(*parts)
