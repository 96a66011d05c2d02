"""The group inventory on the report page: one line per group (``groups.parquet``'s rows), with the partitions
still behind at their latest commit and the member (client id, address, principal) that owned each then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pipelines import row_time
from pipelines.escape import escape

MAX_GROUP_ROWS = 1000
#: Lagging partitions shown per group (the most behind first; groups.parquet keeps up to 50, lag.parquet all).
SHOWN_LAGGING = 10


def _ts(value: Any) -> str:
    if not isinstance(value, datetime):
        return ""
    return row_time.utc(value).strftime("%Y-%m-%d %H:%M:%S")


def _owner(p: Mapping[str, Any]) -> str:
    if p["member_id"] is None:
        return "<i>no owner known</i>"
    where = ", ".join(x for x in (p["member_client"], p["member_principal"]) if x)
    return f"{escape(p['member_client_id'] or 'null')} ({escape(where)})"


def _lagging(g: Mapping[str, Any]) -> str:
    rows = g["lagging"] or []
    lines = [f"{escape(p['topic'])}-{p['partition']}: <b>{p['lag']:,}</b> behind at {_ts(p['ts'])}, owned by "
             f"{_owner(p)}" for p in rows[:SHOWN_LAGGING]]
    if len(rows) > SHOWN_LAGGING:
        lines.append(f"<span class='note'>+{len(rows) - SHOWN_LAGGING} more in groups.parquet and lag.parquet</span>")
    return "<br>".join(lines)


def _clients(g: Mapping[str, Any]) -> str:
    return "<br>".join(f"{escape(c['client_id'] or 'null')} <span class='note'>{escape(c['client_ip'] or '')}"
                       f"{' ' + escape(c['principal']) if c['principal'] else ''}; "
                       f"{escape(c['software'] or 'software unknown')}</span>" for c in g["clients"])


def _generations(g: Mapping[str, Any]) -> str:
    if g["generation_first"] is None:
        return ""
    span = (str(g["generation_first"]) if g["generation_first"] == g["generation_last"]
            else f"{g['generation_first']}–{g['generation_last']}")
    return f"{span}<br><span class='note'>{g['rebalances']} rebalance(s)</span>"


def groups_table(groups: Sequence[Mapping[str, Any]]) -> str:
    """The group inventory: protocol, assignors, members and their clients, coordinator, generations, lag."""
    if not groups:
        return "<p class='note' id='no-groups'>No consumer, share or streams groups in this traffic.</p>"
    rows = []
    for g in groups[:MAX_GROUP_ROWS]:
        protocol = escape(g["protocol"] or "not seen (commits or lag only)")
        if g["protocol_types"]:
            protocol += f"<br><span class='note'>type {escape(', '.join(g['protocol_types']))}</span>"
        assignors = escape(", ".join(g["assignors_chosen"]))
        if g["assignors_offered"]:
            assignors += f"<br><span class='note'>offered {escape(', '.join(g['assignors_offered']))}</span>"
        lag = "" if g["lag"] is None else f"{g['lag']:,}"
        rows.append(
            f"<tr><td class='mono'>{escape(g['group_id'])}</td><td>{protocol}</td><td>{assignors}</td>"
            f"<td class='num'>{g['members']}</td><td class='mono'>{_clients(g)}</td>"
            f"<td class='mono'>{escape(', '.join(g['coordinators']))}</td>"
            f"<td class='mono'>{_ts(g['first_seen'])}<br>{_ts(g['last_seen'])}</td><td>{_generations(g)}</td>"
            f"<td class='num'>{lag}</td><td class='detail'>{_lagging(g)}</td></tr>")
    more = (f"<p class='note'>{len(groups) - MAX_GROUP_ROWS} more groups are in groups.parquet.</p>"
            if len(groups) > MAX_GROUP_ROWS else "")
    head = "".join(f"<th>{h}</th>" for h in (
        "group", "protocol", "assignor (chosen)", "members", "clients (client id, address; software)", "coordinator",
        "first / last (UTC)", "generations / epochs", "lag", "lagging partitions (owner then)"))
    return f"<table id='groups-inventory'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
