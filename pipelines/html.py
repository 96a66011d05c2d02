"""The report page: one self-contained HTML file (inline CSS and SVG, no scripts, no external URLs)."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from contract.clients import apis_text, errors_text, readiness, software_text
from pipelines import row_time
from pipelines.escape import escape
from pipelines.group_inventory_html import groups_table
from pipelines.kafka_rules import SEVERITIES
from pipelines.plots import PlotData
from pipelines.svg import bar_chart, line_chart
from pipelines.topic_map_html import topic_map_section

MAX_FINDING_ROWS = 5_000
MAX_AUDIT_ROWS = 1000
MAX_CLIENT_ROWS = 1000
#: The findings a client's row links to (their detail starts with the client's address and client id).
CLIENT_FINDINGS = ("removed_in_kafka_4", "old_message_format", "unadvertised_version")

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1d2330;
background:#fafbfc;font-size:14px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
.meta{color:#555;margin-bottom:12px}.stats{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.stat{background:#fff;border:1px solid #d8dde6;border-radius:6px;padding:8px 12px;min-width:110px}
.stat b{display:block;font-size:18px}.stat span{color:#666;font-size:12px}
table{border-collapse:collapse;background:#fff;width:100%;margin:6px 0}
th,td{border:1px solid #d8dde6;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#eef1f6;font-weight:600;position:sticky;top:0}
td{overflow-wrap:break-word}td.detail{overflow-wrap:anywhere}
#findings td:nth-child(n+5){overflow-wrap:anywhere}.sev{white-space:nowrap}
td.detail{max-width:640px;min-width:240px}td.num{text-align:right}
.subject{font-weight:600;margin-bottom:2px}#findings td:nth-child(3){white-space:nowrap}
.clip{cursor:help;border-bottom:1px dotted #999}
code.hint{display:block;font-size:11px;background:#f3f5f9;padding:2px 4px;margin-top:3px;user-select:all}
#findings td:nth-child(2),#findings td:nth-child(3),#findings td:nth-child(5),#findings td:nth-child(6),
#findings td:nth-child(7){font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
#findings td:nth-child(4){text-align:right}#findings td:nth-child(8){max-width:640px;min-width:240px}
#findings td:nth-child(9){max-width:320px}
.controls{margin:8px 0;display:flex;gap:10px;flex-wrap:wrap;align-items:center}
th.sortable{cursor:pointer}th[data-dir=asc]::after{content:" ▲"}th[data-dir=desc]::after{content:" ▼"}
.scroll{overflow-x:auto;max-width:100%}
@media (max-width:700px){body{margin:8px;font-size:13px}td.detail{min-width:200px}
#findings thead{display:none}#findings,#findings tbody{display:block}
#findings tr{display:block;border:1px solid #d8dde6;margin:0 0 8px;padding:4px;background:#fff}
#findings td{display:inline-block;border:none;padding:2px 4px;max-width:none;min-width:0}
#findings td:nth-child(n+8){display:block}#findings td:nth-child(3){white-space:normal}
#findings td:empty{display:none}}
td.mono,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
.sev{display:inline-block;border-radius:4px;padding:1px 6px;color:#fff;font-size:12px;font-weight:600}
.sev-critical{background:#7b1fa2}.sev-error{background:#c62828}.sev-warning{background:#ef6c00}
.sev-info{background:#1565c0}.none{color:#2e7d32;font-weight:600}.note{color:#666;font-size:12px}
svg.chart{background:#fff;border:1px solid #d8dde6;border-radius:6px;margin:8px 0;max-width:100%;height:auto}
svg .title{font-size:14px;font-weight:600;fill:#1d2330}svg .grid{stroke:#e3e7ee}svg .axis{stroke:#888}
svg .plot{fill:#fff;stroke:#c9cfd9}svg text{font-family:inherit;font-size:11px;fill:#333}
svg .xtick{text-anchor:middle}svg .ytick{text-anchor:end}svg .ylab{text-anchor:end;dominant-baseline:middle}
svg .ylabel{text-anchor:middle}svg .lg{font-size:12px}svg .pl{font-size:10px;fill:#555}svg .bl{font-size:10px}
svg .empty{text-anchor:middle;fill:#999}svg .gap{fill:#f1f1f1;stroke:#bbb;stroke-dasharray:3 3}
svg .gapl{font-size:9px;fill:#777;text-anchor:middle;writing-mode:vertical-rl}
nav a{margin-right:14px}
"""


def _ts(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return row_time.utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return escape(str(value))


def _epoch(value: float | None) -> str:
    if value is None:
        return "-"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


#: Captures that are no file ``show`` can read: the tap's (``tap:IFACE``) and standard input's.
_NOT_FILES = ("tap:", "<stdin>")


def show_command(sample: Mapping[str, Any], events: str | None = None) -> str:
    """The command that shows an evidence sample's message and its response: ``show CAPTURE`` for a capture file
    (its connections numbered as the dataset numbers them, ``inspector.rows.conn_ids``), ``show EVENTS`` for what the
    tap or standard input gave (no file to read again: the events are shown)."""
    capture = str(sample.get("capture") or "")
    picks = f"--filter conn_id={sample['conn_id']} --filter correlation_id={sample['correlation_id']}"
    if capture and not capture.startswith(_NOT_FILES):
        return f"kafka-inspector show {shlex.quote(capture)} {picks}"
    where = shlex.quote(events) if events else "EVENTS_DIR"
    named = f" --filter {shlex.quote('capture=' + capture)}" if capture else ""
    return f"kafka-inspector show {where}{named} {picks}"


def _evidence(ev: Sequence[Any] | None, events: str | None) -> str:
    """The command that shows the first sample (the sample itself is in it); how many more findings.parquet
    holds."""
    if not ev:
        return ""
    more = f"<br><span class='note'>+{len(ev) - 1} more</span>" if len(ev) > 1 else ""
    return f"<code class='hint'>{escape(show_command(ev[0], events))}</code>{more}"


def _severity(sev: str) -> str:
    return f'<span class="sev sev-{escape(sev)}">{escape(sev)}</span>'


def _table(table_id: str, headers: Sequence[str], rows: Sequence[str], total: int, limit: int, rest: str) -> str:
    """A table of the first ``limit`` of ``total`` items (``rows``, rendered), then a note on where the rest
    are (``rest``)."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    more = f"<p class='note'>{total - limit} more {rest}.</p>" if total > limit else ""
    return (f"<div class='scroll'><table id='{table_id}'><thead><tr>{head}</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>" + more)


def _clip(value: object, limit: int) -> str:
    """``value`` as HTML text, at most ``limit`` characters shown (then "…"), the whole in its tooltip."""
    text = "" if value is None else str(value)
    if len(text) <= limit:
        return escape(text)
    return f"<span class='clip' title='{escape(text)}'>{escape(text[:limit])}…</span>"


#: A finding's detail shown on the page at most (findings.parquet has it whole).
DETAIL_CHARS = 1500


def findings_table(findings: Sequence[Mapping[str, Any]], events: str | None = None) -> str:
    """The findings, most severe first (the first ``MAX_FINDING_ROWS``); the page's script (``SCRIPT``) filters them
    by severity, kind and text (also from the address: ``report.html#sev=error&kind=removed_in_kafka_4``) and sorts
    them by any column."""
    if not findings:
        return '<p class="none" id="no-findings">No findings: nothing in this traffic matched a detector.</p>'
    rows = []
    for i, f in enumerate(findings[:MAX_FINDING_ROWS]):
        ts = f["ts_first"]
        order = ts.timestamp() if isinstance(ts, datetime) else 0
        subject = f.get("subject")
        about = f"<div class='subject'>{_clip(subject, 200)}</div>" if subject else ""
        rows.append(  # the cells' styles by column (CSS): 10,000 findings make a page of a few MB
            f"<tr id='finding-{i}' data-sev='{escape(f['severity'])}' data-kind='{escape(f['kind'])}'>"
            f"<td data-v='{SEVERITIES.index(f['severity']) if f['severity'] in SEVERITIES else -1}'>"
            f"{_severity(f['severity'])}</td><td>{escape(f['kind'])}</td>"
            f"<td data-v='{order:.0f}'>{_ts(f['ts_first'])}<br>{_ts(f['ts_last'])}</td>"
            f"<td data-v='{f.get('occurrences') or 1}'>{f.get('occurrences') or 1:,}</td>"
            f"<td>{_clip(f['client'], 60)}</td><td>{_clip(f['broker'], 60)}</td><td>{_clip(f['group_id'], 60)}</td>"
            f"<td>{about}{_clip(f['detail'], DETAIL_CHARS)}</td><td>{_evidence(f['evidence'], events)}</td></tr>"
        )
    kinds = sorted({str(f["kind"]) for f in findings[:MAX_FINDING_ROWS]})
    sevs = [s for s in reversed(SEVERITIES) if any(f["severity"] == s for f in findings)]
    controls = (
        "<div class='controls' id='finding-controls'><label>severity <select id='f-sev'><option value=''>all</option>"
        + "".join(f"<option>{escape(s)}</option>" for s in sevs)
        + "</select></label> <label>kind <select id='f-kind'><option value=''>all</option>"
        + "".join(f"<option>{escape(k)}</option>" for k in kinds)
        + "</select></label> <label>text <input id='f-text' type='search' placeholder='client, group, words…'>"
        "</label> <span id='f-count' class='note'></span> <span class='note'>click a column's title to sort</span>"
        "</div>")
    return controls + _table("findings", ("severity", "kind", "first / last (UTC)", "times", "client", "broker",
                                          "group", "what (subject, then detail)",
                                          "evidence (capture #conn corr; the command shows it)"),
                             rows, len(findings), MAX_FINDING_ROWS, "findings are in findings.parquet")


#: The page's one script, inline (no network): the findings table's filters and sorting.
SCRIPT = """
(function(){var t=document.getElementById('findings');if(!t)return;var b=t.tBodies[0];
var rows=Array.prototype.slice.call(b.rows);var sev=document.getElementById('f-sev'),
kind=document.getElementById('f-kind'),text=document.getElementById('f-text'),count=document.getElementById('f-count');
function apply(){var s=sev.value,k=kind.value,q=text.value.toLowerCase(),n=0;rows.forEach(function(r){
var ok=(!s||r.dataset.sev===s)&&(!k||r.dataset.kind===k)&&(!q||r.textContent.toLowerCase().indexOf(q)>=0);
r.style.display=ok?'':'none';if(ok)n++;});count.textContent=n+' of '+rows.length+' shown';}
[sev,kind].forEach(function(e){e.addEventListener('change',apply);});text.addEventListener('input',apply);
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.classList.add('sortable');
th.addEventListener('click',function(){var up=th.dataset.dir!=='asc';Array.prototype.forEach.call(
t.tHead.rows[0].cells,function(c){delete c.dataset.dir;});th.dataset.dir=up?'asc':'desc';
rows.sort(function(a,c){var x=a.cells[i],y=c.cells[i],p=x.dataset.v,q=y.dataset.v,d;
if(p!==undefined&&q!==undefined){d=parseFloat(p)-parseFloat(q);}else{d=x.textContent.localeCompare(y.textContent);}
return up?d:-d;});rows.forEach(function(r){b.appendChild(r);});});});
location.hash.replace(/^#/,'').split('&').forEach(function(p){var kv=p.split('=');var v=decodeURIComponent(kv[1]||'');
if(kv[0]==='sev')sev.value=v;if(kv[0]==='kind')kind.value=v;if(kv[0]==='text')text.value=v;});apply();})();
"""


def summary_table(findings: Sequence[Mapping[str, Any]]) -> str:
    counts = Counter((f["kind"], f["severity"]) for f in findings)
    if not counts:
        return ""
    kinds = sorted({k for k, _ in counts}, key=lambda k: (k is None, str(k)))  # a null kind last
    sevs = [s for s in reversed(SEVERITIES) if any(counts[(k, s)] for k in kinds)]
    head = "".join(f"<th>{_severity(s)}</th>" for s in sevs)
    body = "".join(
        f"<tr><td class='mono'>{escape(k)}</td>" + "".join(f"<td>{counts[(k, s)] or ''}</td>" for s in sevs)
        + f"<td><b>{sum(counts[(k, s)] for s in sevs)}</b></td></tr>" for k in kinds)
    return (f"<div class='scroll'><table id='summary' style='width:auto'><thead><tr><th>kind</th>{head}"
            f"<th>total</th></tr></thead><tbody>{body}</tbody></table></div>")


def audit_table(audit: Sequence[Mapping[str, Any]]) -> str:
    if not audit:
        return "<p class='note'>No admin writes (KIP-4 APIs) in this traffic.</p>"
    rows = []
    for a in audit[:MAX_AUDIT_ROWS]:
        who = a["principal"] or ""
        outcome = escape(a["outcome"] or "")
        if a["outcome"] != "ok":
            outcome = f"<b>{outcome}</b>"
        rows.append(
            f"<tr><td class='mono'>{_ts(a['ts'])}</td><td class='mono'>{escape(a['client'] or '')}</td>"
            f"<td class='mono'>{_clip(a['client_id'], 60)}</td><td class='mono'>{_clip(who, 60)}"
            f"{' (forwarded)' if a['forwarded'] else ''}</td><td class='mono'>{escape(a['broker'] or '')}</td>"
            f"<td>{escape(a['api_name'] or '')} v{a['api_version']}"
            f"{' <i>validate only</i>' if a['validate_only'] else ''}</td>"
            f"<td class='detail'>{escape(a['targets'] or '')}</td><td>{outcome}</td></tr>")
    return _table("admin-audit", ("time (UTC)", "client", "client id", "principal", "broker", "API", "targets",
                                  "outcome"),
                  rows, len(audit), MAX_AUDIT_ROWS, "rows are in admin_audit.parquet")


def _client_findings(client: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str:
    """Links to the shown findings of ``CLIENT_FINDINGS`` kinds about this client, by kind."""
    prefix = f"{client['client_ip']} (client id {client['client_id'] if client['client_id'] is not None else 'null'}"
    links: dict[str, list[int]] = {}
    for i, f in enumerate(findings[:MAX_FINDING_ROWS]):
        if f["kind"] in CLIENT_FINDINGS and str(f["detail"]).startswith(prefix):
            links.setdefault(f["kind"], []).append(i)
    return "<br>".join(f"<a href='#finding-{ids[0]}'>{escape(kind)}</a> ×{len(ids)}" for kind, ids in links.items())


def clients_table(clients: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]) -> str:
    """The client inventory (``clients.parquet``): software, APIs, errors and Kafka 4.0 readiness per client."""
    if not clients:
        return "<p class='note'>No clients in this traffic.</p>"
    rows = []
    for c in clients[:MAX_CLIENT_ROWS]:
        row = dict(c)
        software = escape(software_text(row)) if c["software_name"] is not None else "<i>software unknown</i>"
        ready = [escape(text) for text in readiness(row)]
        rows.append(
            f"<tr><td class='mono'>{escape(c['client_ip'] or '')}</td><td class='mono'>{_clip(c['client_id'], 60)}"
            f"</td><td class='mono'>{_clip(c['principal'], 60)}</td>"
            f"<td>{software}</td>"
            f"<td class='mono'>{_ts(c['first_seen'])}<br>{_ts(c['last_seen'])}</td>"
            f"<td class='mono'>{escape(', '.join(c['brokers']))}</td><td>{c['requests']}</td>"
            f"<td class='detail'>{escape(apis_text(row))}</td><td>{escape(errors_text(row))}</td>"
            f"<td>{'<br>'.join(ready) if ready else '<span class=none>ready</span>'}</td>"
            f"<td>{_client_findings(c, findings)}</td></tr>")
    return _table("clients", ("client", "client id", "principal", "software", "first / last (UTC)", "brokers",
                              "requests", "APIs (version ×requests)", "errors (×responses)", "Kafka 4.0", "findings"),
                  rows, len(clients), MAX_CLIENT_ROWS, "clients are in clients.parquet")


def plots_section(p: PlotData) -> str:
    unit = f"per {p.bucket_s} s"
    span = (p.ts_min // p.bucket_s * p.bucket_s, p.ts_max) if p.ts_min is not None and p.ts_max is not None else None
    parts = [
        "<h2 id='traffic'>Traffic and errors over time</h2>",
        line_chart(p.traffic, f"Requests per API ({unit})", "requests", x_range=span),
        line_chart(p.errors, f"Responses with errors per API ({unit})", "responses", x_range=span),
        "<h2 id='latency'>Latency per API and broker</h2>",
        bar_chart([(f"{api} @ {broker} (n={n})", [p50, p99]) for api, broker, n, p50, p99 in p.latency],
                  ["p50", "p99"], "Response latency, slowest p99 first", "ms"),
        "<h2 id='groups'>Consumer groups: generations and membership</h2>",
        line_chart(p.generations, "Generation id per group (JoinGroup responses)", "generation", step=True,
                   point_labels=p.generation_labels),
        line_chart(p.members, "Members per generation", "members", step=True),
        line_chart(p.rebalances, "Rebalance duration per group (each point a classic generation or a KIP-848 "
                                 "member epoch, at its start; rebalances.parquet has each)", "ms"),
        "<h2 id='lag'>Consumer lag</h2>",
        line_chart(p.lag, "Records behind per group and topic (log end minus committed offset, summed over the "
                          "partitions each group committed; lag.parquet has each partition and commit)", "records"),
    ]
    return "\n".join(parts)


def render(
    findings: Sequence[Mapping[str, Any]],
    audit: Sequence[Mapping[str, Any]],
    plots: PlotData,
    source: str,
    generated: datetime | None = None,
    clients: Sequence[Mapping[str, Any]] = (),
    topics: Sequence[Mapping[str, Any]] = (),
    groups: Sequence[Mapping[str, Any]] = (),
) -> str:
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    by_sev = Counter(f["severity"] for f in findings)
    stats = [
        (f"{plots.events:,}", "events"), (f"{plots.requests:,}", "requests"), (f"{plots.responses:,}", "responses"),
        (f"{plots.connections:,}", "connections"), (f"{len(findings):,}", "findings"),
    ] + [(f"{by_sev[s]:,}", s) for s in reversed(SEVERITIES) if by_sev[s]]
    stat_html = "".join(f"<div class='stat'><b>{escape(v)}</b><span>{escape(k)}</span></div>" for v, k in stats)
    captures = ", ".join(plots.captures[:20]) + (f" and {len(plots.captures) - 20} more"
                                                if len(plots.captures) > 20 else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kafka Inspector report</title><style>{CSS}</style></head>
<body>
<h1>Kafka Inspector: anomaly report</h1>
<div class="meta">Events: <span class="mono">{escape(source)}</span> &middot; traffic from {_epoch(plots.ts_min)}
to {_epoch(plots.ts_max)} &middot; captures: {escape(captures) or '-'} &middot; generated {when}</div>
<div class="stats">{stat_html}</div>
<nav><a href="#findings-section">Findings</a><a href="#clients-section">Clients</a>
<a href="#topics-section">Topic map</a><a href="#groups-section">Groups</a><a href="#audit">Admin audit</a>
<a href="#traffic">Traffic</a>
<a href="#latency">Latency</a><a href="#groups">Groups</a></nav>
<h2 id="findings-section">Findings</h2>
{summary_table(findings)}
{findings_table(findings, source if ', ' not in source else None)}
<h2 id="clients-section">Clients and Kafka 4.0 readiness</h2>
{clients_table(clients, findings)}
<h2 id="topics-section">Topic map: who produces to and consumes from each topic</h2>
{topic_map_section(topics)}
<h2 id="groups-section">Groups: protocol, members, lag and who owned the lagging partitions</h2>
{groups_table(groups)}
<h2 id="audit">Admin writes (audit)</h2>
{audit_table(audit)}
{plots_section(plots)}
<p class="note">Evidence names messages by capture, connection id and correlation id: the command under each
finding's evidence shows its first sample (add <span class="mono">-v</span> for the whole body; hover a sample for
its own command), run where the capture files are.</p>
<script>{SCRIPT}</script>
</body></html>
"""
