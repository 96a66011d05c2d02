"""Cross-check our events against Wireshark's independent Kafka dissector (tshark)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from contract.kafka import API_NAMES

HAVE_TSHARK = shutil.which("tshark") is not None

#: tshark field -> our column, compared where tshark decoded the message without complaint.
GROUP_FIELDS = {
    "kafka.consumer_group": "group_id",
    "kafka.member_id": "member_id",
    "kafka.generation_id": "generation_id",
    "kafka.protocol_type": "protocol_type",
}


def tshark_pdus(pcap: Path, ports: set[int]) -> list[dict[str, Any]]:
    """Every Kafka PDU tshark finds, with its top-level fields and the expert messages it raised."""
    cmd = ["tshark", "-n", "-r", str(pcap), "-Y", "kafka", "-T", "json", "--no-duplicate-keys", "-J", "tcp kafka"]
    for port in sorted(ports):
        cmd[4:4] = ["-d", f"tcp.port=={port},kafka"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout
    pdus = []
    for pkt in json.loads(out or "[]"):
        layers = pkt["_source"]["layers"]
        tcp = layers.get("tcp", {})
        ports = frozenset((_int(tcp.get("tcp.srcport")), _int(tcp.get("tcp.dstport"))))
        layer = layers.get("kafka")
        for pdu in layer if isinstance(layer, list) else [layer]:
            flat: dict[str, Any] = {"ports": ports}
            _flatten(pdu, flat)
            pdus.append(flat)
    return pdus


def _flatten(node: Any, out: dict[str, Any]) -> None:
    """First occurrence of every field anywhere in the PDU's tree (plus all expert messages)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "_ws.expert":
                items = value if isinstance(value, list) else [value]
                out.setdefault("expert", []).extend(
                    str(i.get("_ws.expert.message", "")) for i in items if isinstance(i, dict))
            elif isinstance(value, (dict, list)):
                _flatten(value, out)
            else:
                out.setdefault(key, value)
    elif isinstance(node, list):
        for item in node:
            _flatten(item, out)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def cross_check(pcap: Path, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Assert our rows agree with tshark; returns how many PDUs of each kind were compared."""
    ports = {r["broker_port"] for r in rows if r["broker_port"] is not None}
    ours_req = Counter((r["api_key"], r["api_version"], r["correlation_id"], r["client_id"])
                       for r in rows if r["direction"] == "request" and r["envelope_correlation_id"] is None)
    ours_resp = Counter((r["api_key"], r["api_version"], r["correlation_id"])
                        for r in rows if r["direction"] == "response" and r["envelope_correlation_id"] is None)
    by_id = {(frozenset((r["client_port"], r["broker_port"])), r["direction"], r["api_key"], r["correlation_id"]): r
             for r in rows}
    theirs_req: Counter[tuple[Any, ...]] = Counter()
    theirs_resp: Counter[tuple[Any, ...]] = Counter()
    # Legacy SASL tokens (after SaslHandshake v0) have no Kafka header: tshark takes the client's for requests of
    # an api key no Kafka has; we make them SaslToken events. Counted per connection on both sides instead.
    our_tokens = Counter(frozenset((r["client_port"], r["broker_port"])) for r in rows
                         if r["api_name"] == "SaslToken" and r["direction"] == "request")
    their_tokens: Counter[frozenset[Any]] = Counter()
    compared_fields = 0
    for pdu in tshark_pdus(pcap, ports):
        expert = " ".join(pdu.get("expert", []))
        clean = not any(w in expert for w in ("Unsupported", "Malformed", "Invalid", "Unknown"))
        corr = _int(pdu.get("kafka.correlation_id"))
        if "kafka.request_key" in pdu:
            key = _int(pdu["kafka.request_key"])
            if pdu["ports"] in our_tokens and key not in API_NAMES:
                their_tokens[pdu["ports"]] += 1
                continue
            client = pdu.get("kafka.client_id")
            client = None if client in (None, "[ Null ]") else client
            theirs_req[(key, _int(pdu.get("kafka.api_version")), corr, client)] += 1
            direction = "request"
        elif "kafka.response_key" in pdu:
            key = _int(pdu["kafka.response_key"])
            theirs_resp[(key, _int(pdu.get("kafka.response.version")), corr)] += 1
            direction = "response"
        else:
            continue  # tshark: "Request missing"; we decode those by candidates
        row = by_id.get((pdu["ports"], direction, key, corr))
        if clean and row is not None and key != 10:  # FindCoordinator's Key is not promoted to group_id
            for field, column in GROUP_FIELDS.items():
                value = pdu.get(field)
                if value is None or value == "[ Null ]":
                    continue
                mine = row[column]
                expected = _int(value) if column == "generation_id" else value
                assert mine == expected, f"{pcap.name}: {direction} {key} corr {corr}: {column} {mine!r} != {value!r}"
                compared_fields += 1
    assert their_tokens == our_tokens, f"{pcap.name}: legacy SASL tokens: tshark {their_tokens}, ours {our_tokens}"
    missing_req = theirs_req - ours_req
    missing_resp = theirs_resp - ours_resp
    assert not missing_req, f"{pcap.name}: requests tshark saw that we did not: {dict(missing_req)}"
    assert not missing_resp, f"{pcap.name}: responses tshark saw that we did not: {dict(missing_resp)}"
    return {"requests": sum(theirs_req.values()), "responses": sum(theirs_resp.values()), "fields": compared_fields}
