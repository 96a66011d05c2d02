"""The end of a tap session: the last rows and file, ``connections.parquet``, ``summary.json`` (with its
``tap`` section) and the summary printed, as ``read`` writes them."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.read.reader import keylog_warnings, write_connections
from inspector.rows.summary_output import print_summary, summary_dict
from inspector.rows.writers import output_error, remove_quietly
from inspector.tap.tcpdump import CaptureStats

if TYPE_CHECKING:
    from inspector.tap.driver import TapDriver


def write_totals(tap: TapDriver) -> None:
    """The last rows, the last file, ``connections.parquet`` and ``summary.json``; the summary printed."""
    assert tap.writer is not None and tap.tcpdump is not None
    decoder, summary, state = tap.decoder, tap.decoder.summary, tap.controller.state
    decoder.finish(decoder.stream_ts or time.time())
    if tap.keylog is not None:
        keylog_warnings(tap.keylog.finish(), str(tap.keylog.path), summary)
    batch = decoder.take()
    if batch is not None:
        tap.writer.write(batch)
        tap.wrote(batch)
    files = tap.writer.close()  # OutputError (the file in progress removed) if the disk refuses
    st = tap.capture_stats
    name = tap.capture_name
    if st.kernel_dropped:
        summary.warnings.append(
            f"{name}: the kernel dropped {st.kernel_dropped:,} packets (tcpdump's counter): "
            "TCP streams have gaps; raise --buffer, narrow --filter/--port or add CPU")
    if st.interface_dropped:
        summary.warnings.append(f"{name}: the interface dropped {st.interface_dropped:,} packets")
    if tap.tcpdump.killed:
        summary.warnings.append(f"{name}: tcpdump had to be killed; its final counters may be missing")
    outages = state.outages
    down = state.down_seconds()
    if outages:
        exited = sum(1 for o in outages if o.tcpdump_exited)
        summary.warnings.append(
            f"{name}: the interface was down {len(outages)} time{'s' if len(outages) != 1 else ''} "
            f"({down:.1f}s in all" + (f"; tcpdump exited with {exited} of them" if exited else "")
            + "): traffic meanwhile was not captured; connections open across an outage show gaps "
              "where bytes were missed (tap.outages in summary.json)")
    tap.refresh()
    n = len(files)
    try:
        write_connections(summary, tap.out)
    except OSError as exc:
        remove_quietly(tap.out / "connections.parquet")  # never leave it half-written
        raise output_error(tap.out, exc, f"{n} complete event file{'s' if n != 1 else ''} kept; "
                                          "connections.parquet and summary.json not written") from exc
    doc = summary_dict(summary)
    doc["tap"] = _tap_section(tap, st, down, files)
    tmp = tap.out / ".summary.json.inprogress"
    try:
        tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, tap.out / "summary.json")
    except OSError as exc:
        remove_quietly(tmp)
        raise output_error(tap.out, exc, f"{n} complete event file{'s' if n != 1 else ''} and "
                                          "connections.parquet kept; summary.json not written") from exc
    if tap.view is not None and tap.console is not None:
        tap.view.stop()
        print_summary(tap.console, summary, time.monotonic() - tap.started)
        drops = "?" if st.kernel_dropped is None else f"{st.kernel_dropped:,}"
        down_line = (f"; interface down {len(outages)} time{'s' if len(outages) != 1 else ''} ({down:.1f}s)"
                     if outages else "")
        tap.console.print(f"tcpdump: {st.captured if st.captured is not None else '?'} packets captured, "
                           f"{drops} dropped by kernel{down_line}; wrote {summary.messages:,} events to "
                           f"{tap.out} ({n} file{'s' if n != 1 else ''})", highlight=False)
    elif tap.args.quiet:
        for warning in summary.warnings:
            print(f"kafka-inspector tap: warning: {warning}", file=sys.stderr, flush=True)

def _tap_section(tap: TapDriver, st: CaptureStats, down: float, files: list[Path]) -> dict[str, Any]:
    """``summary.json``'s ``tap`` section."""
    state = tap.controller.state
    return {
        "interface": tap.args.interface,
        "filter": tap.bpf,
        "started": tap.started_wall,
        "seconds": round(time.monotonic() - tap.started, 3),
        "stopped_by": tap.controller.stopped_by,
        "stop_catch_up_seconds": None if state.catch_up_seconds is None else round(state.catch_up_seconds, 3),
        "packets_read": state.packets_read,
        "bytes_read": state.bytes_read,
        "tcpdump_captured": st.captured,
        "tcpdump_received_by_filter": st.received,
        "kernel_dropped": st.kernel_dropped,
        "interface_dropped": st.interface_dropped or 0,
        "interface_outages": len(state.outages),
        "interface_down_seconds": round(down, 3),
        "max_outage": tap.args.max_outage or None,
        "outages": [o.as_dict() for o in state.outages],
        "files": [p.name for p in files],
    }
