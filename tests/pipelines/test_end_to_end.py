"""The report on real captures (pcaps/): the recorded protocol disagreements are found, normal traffic is quiet,
the page renders in a real browser, and the Spark decode job writes what ``kafka-inspector read`` writes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from inspector.rows.client_inventory import COLUMNS, inventory
from inspector.rows.parquet_file import read_events
from inspector.rows.topic_traffic import COLUMNS as TOPIC_COLUMNS
from inspector.rows.topic_traffic import TopicMap
from pipelines import decode_job, report
from tests.capture_secrets import assert_no_secret, capture_secrets
from tests.pipelines.rows import canonical

PCAPS = Path(__file__).resolve().parents[2] / "pcaps"
KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"

#: captures recorded to show a protocol disagreement, and the kinds each must produce
SCENARIOS = {
    "tansu-group-no-common-assignor.pcap": {"inconsistent_group_protocol"},
    "tansu-restart-new-cluster-id.pcap": {"endpoint_identity_changed"},
    "tansu-apiversions-v5-identity.pcap": {"misrouted_api_versions", "api_versions_one_sided_identity"},
    "mock-cluster-apiversions-v5-misrouted.pcap": {"misrouted_api_versions", "api_versions_one_sided_identity"},
    "tansu-kafka-python-0.10-removed-versions.pcap": {"removed_in_kafka_4", "old_message_format"},
    "tansu-classic-rebalance-storm.pcap": {"rebalance_storm"},
    "tansu-consumer-lag.pcap": {"consumer_lag_growing"},
}
#: kinds that must never come out of ordinary traffic
PROTOCOL_KINDS = {
    "inconsistent_group_protocol", "group_protocol_not_offered", "group_protocol_mismatch",
    "undecodable_group_metadata", "overlapping_assignment", "unassigned_partitions", "misrouted_api_versions",
    "api_versions_one_sided_identity", "rebootstrap_required", "endpoint_identity_changed", "unadvertised_version",
    "envelope_forwarding_failed", "endpoint_type_mismatch", "removed_in_kafka_4", "old_message_format",
    "producer_sequence_gap", "transaction_anomaly", "rebalance_storm", "group_member_errors",
}


@pytest.fixture(scope="module")
def events_dir(demo_read: Path) -> Path:
    """One ``read`` of every capture in pcaps/ (the session's)."""
    assert set(SCENARIOS) <= {p.name for p in PCAPS.glob("*.pcap")}
    return demo_read


@pytest.fixture(scope="module")
def report_dir(spark: SparkSession, events_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    code = report.main(["report", str(events_dir), "--output", str(out), "--master", "local[2]"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def findings(report_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(report_dir / "findings.parquet").to_pylist()
    return rows


@pytest.fixture(scope="module")
def conn_capture(events_dir: Path) -> dict[int, str]:
    t = pq.read_table(events_dir / "events", columns=["conn_id", "capture"]).to_pylist()
    return {r["conn_id"]: r["capture"] for r in t}


def by_capture(findings: list[dict[str, Any]], conn_capture: dict[int, str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        for cap in {conn_capture[e["conn_id"]] for e in f["evidence"] or ()}:
            out[cap].append(f)
    return out


def test_report_writes_its_outputs(report_dir: Path) -> None:
    assert (report_dir / "report.html").stat().st_size > 10_000
    rebalances = pq.read_table(report_dir / "rebalances.parquet").to_pylist()
    group = [r for r in rebalances if r["group_id"] == "inspector-group"]  # tansu-consumer-group-3-members
    assert [r["generation"] for r in group] == [0, 1, 3] and len(group[1]["members"]) == 3
    assert len(group[2]["left"]) == 2 and all(r["duration_ms"] > 0 for r in group)
    assert {r["protocol"] for r in group} == {"classic"}
    # mock-cluster-kip848-consumer-group: four KIP-848 members join one by one, one leaves, then all close
    kip848 = [r for r in rebalances if r["group_id"] == "kip848-group"]
    assert {r["protocol"] for r in kip848} == {"consumer"} and [r["generation"] for r in kip848] == [2, 3, 4, 5, 6, 7]
    assert all(r["complete"] for r in kip848) and max(len(r["members"]) for r in kip848) == 3
    assert sum(len(r["left"]) for r in kip848) >= 2
    lag = pq.read_table(report_dir / "lag.parquet").to_pylist()
    lagging = [r for r in lag if r["group_id"] == "lagging-group" and r["source"] == "OffsetCommit"]
    assert len(lagging) >= 20 and all(r["lag"] is not None and r["lag"] >= 0 for r in lagging)
    assert {r["topic"] for r in lag if r["group_id"] == "kip848-group"} == {"kip848-orders"}
    audit = pq.read_table(report_dir / "admin_audit.parquet").to_pylist()
    apis = {(a["api_name"], a["client_id"]) for a in audit}
    assert ("CreateTopics", "confluent-admin") in apis and ("DeleteTopics", "kafka-python-admin") in apis
    acl = [a for a in audit if a["api_name"] == "CreateAcls"]
    assert acl and all(a["outcome"].startswith("response undecodable") for a in acl)  # Tansu's truncated answer


def test_each_recorded_scenario_yields_its_findings(findings: list[dict[str, Any]],
                                                    conn_capture: dict[int, str]) -> None:
    per = by_capture(findings, conn_capture)
    for capture, kinds in SCENARIOS.items():
        assert kinds <= {f["kind"] for f in per[capture]}, capture


def test_real_inconsistent_group_protocol_from_tansu(findings: list[dict[str, Any]],
                                                     conn_capture: dict[int, str]) -> None:
    (f,) = [f for f in by_capture(findings, conn_capture)["tansu-group-no-common-assignor.pcap"]
            if f["kind"] == "inconsistent_group_protocol"]
    assert f["group_id"] == "mixed-assignors"
    assert "INCONSISTENT_GROUP_PROTOCOL (23)" in f["detail"]
    assert "offering [range]" in f["detail"] and "members run [roundrobin]" in f["detail"]


def test_restart_under_another_cluster_id(findings: list[dict[str, Any]], conn_capture: dict[int, str]) -> None:
    changed = [f for f in by_capture(findings, conn_capture)["tansu-restart-new-cluster-id.pcap"]
               if f["kind"] == "endpoint_identity_changed"]
    assert len(changed) == 1
    assert "it was cluster id tansu_cluster " in changed[0]["detail"]
    assert "then cluster id tansu_cluster_reborn" in changed[0]["detail"]


def test_kip_1242_probes(findings: list[dict[str, Any]], conn_capture: dict[int, str]) -> None:
    per = by_capture(findings, conn_capture)
    tansu = [f for f in per["tansu-apiversions-v5-identity.pcap"] if f["kind"] == "misrouted_api_versions"]
    assert sorted("node 1111 of cluster tansu_cluster" in f["detail"] for f in tansu) == [False, True]
    assert all("is node 111 of cluster tansu_cluster" in f["detail"] for f in tansu)
    mock = [f for f in per["mock-cluster-apiversions-v5-misrouted.pcap"] if f["kind"] == "misrouted_api_versions"]
    assert any("asks for node 1 of cluster mockCluster" in f["detail"] and " is node 3 of " in f["detail"]
               and "UNSUPPORTED_VERSION (35)" in f["detail"] for f in mock)
    one_sided = [f for f in per["tansu-apiversions-v5-identity.pcap"]
                 if f["kind"] == "api_versions_one_sided_identity"]
    # Tansu 0.6.0 closes the connection on a v5 request with a ClusterId and answers NONE (0) without one
    assert sorted(("did not answer" in f["detail"], "answered NONE (0)" in f["detail"]) for f in one_sided) == [
        (False, True), (True, False)]


def test_normal_captures_yield_no_protocol_findings(findings: list[dict[str, Any]],
                                                    conn_capture: dict[int, str]) -> None:
    per = by_capture(findings, conn_capture)
    for capture in sorted(set(conn_capture.values()) - set(SCENARIOS)):
        assert not [f["kind"] for f in per[capture] if f["kind"] in PROTOCOL_KINDS], capture


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_report_page_in_headless_chromium(report_dir: Path, findings: list[dict[str, Any]], tmp_path: Path) -> None:
    page = (report_dir / "report.html").resolve()
    html = page.read_text()
    assert "http://" not in html and "https://" not in html  # self-contained
    dom = chromium(["--dump-dom", page.as_uri()], tmp_path / "profile").stdout
    assert "<table id=\"findings\">" in dom or "<table id='findings'>" in dom
    assert len(re.findall(r"<tr id=[\"']finding-\d+[\"'][^>]*><td[^>]*><span class=\"sev", dom)) == len(findings)
    for title in ("Requests per API", "Responses with errors per API", "Response latency",
                  "Generation id per group", "Members per generation", "Records behind per group and topic",
                  "Rebalance duration per group"):
        assert f'aria-label="{title}' in dom, title
    assert dom.count("<svg") == 8 and dom.count("<polyline") >= 7
    assert 'id="topic-map-flow"' in dom and "<table id=\"topic-map\">" in dom
    for name, size in (("report-1400.png", "1400,5000"), ("report-phone.png", "390,5000")):  # desktop, phone
        shot = tmp_path / name  # look at them: the test's tmp folder
        chromium(["--hide-scrollbars", f"--window-size={size}", f"--screenshot={shot}", page.as_uri()],
                 tmp_path / "profile")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    # the demo's captures are days apart: the time plots cut the idle days (a break each) instead of squashing
    assert "without traffic</title>" in html


def test_decode_job_writes_what_read_writes(spark: SparkSession, events_dir: Path, tmp_path: Path) -> None:
    captures = sorted(PCAPS.glob("*.pcap"))
    n = decode_job.run(spark, [str(p) for p in captures], str(tmp_path))
    spark_events = pq.read_table(tmp_path / "events")
    read_events = pq.read_table(events_dir / "events")
    assert spark_events.schema.equals(read_events.schema)
    assert n == read_events.num_rows
    # both number file i's connections in block i (inspector.rows.conn_ids)
    assert canonical(spark_events.to_pylist()) == canonical(read_events.to_pylist())
    # connections stay distinct: one conn_id per (capture, client endpoint, broker endpoint)
    keys = {(r["capture"], r["client_ip"], r["client_port"], r["broker_ip"], r["broker_port"], r["conn_id"])
            for r in spark_events.to_pylist()}
    assert len(keys) == len({k[:5] for k in keys}) == len({k[5] for k in keys})


def test_the_pages_evidence_commands_show_the_messages(report_dir: Path, events_dir: Path,
                                                       findings: list[dict[str, Any]]) -> None:
    """Every hint on the page is a command that shows its sample (a request and its response) from the capture."""
    import html as html_text
    import shlex

    page = (report_dir / "report.html").read_text(encoding="utf-8")
    hints = [html_text.unescape(h) for h in re.findall(r"<code class='hint'>(.*?)</code>", page)]
    assert len(hints) == sum(1 for f in findings if f["evidence"])
    events = pq.read_table(events_dir / "events", columns=["capture", "conn_id", "correlation_id"]).to_pylist()
    counts = defaultdict(int)
    for r in events:
        counts[(r["capture"], r["conn_id"], r["correlation_id"])] += 1
    for f in findings:
        sample = f["evidence"][0]
        command = f"kafka-inspector show {shlex.quote(sample['capture'])} --filter conn_id={sample['conn_id']} " \
                  f"--filter correlation_id={sample['correlation_id']}"
        assert command in hints
        out = subprocess.run([str(KAFKA_INSPECTOR), *shlex.split(command)[1:]], cwd=PCAPS, capture_output=True,
                             text=True, timeout=120, check=True).stdout.splitlines()
        want = counts[(sample["capture"], sample["conn_id"], sample["correlation_id"])]
        shown = [line for line in out if f" #{sample['conn_id']} " in line
                 and f"corr={sample['correlation_id']}" in line]
        assert want >= 1 and len(shown) == want and out[-1].startswith(f"{want} of "), (command, out)


def test_report_cli_rejects_missing_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["report", str(tmp_path / "nope"), "--output", str(tmp_path / "out")]) == 3
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert report.main(["report", str(tmp_path / "empty"), "--output", str(tmp_path / "out")]) == 3




def test_no_secret_of_the_sasl_capture_in_the_report(report_dir: Path) -> None:
    """The report's every file (findings, admin audit, the page, Spark's logs) over events that include real
    SASL exchanges, a salted password and a token on the wire: none of their secrets, in any encoding."""
    secrets = capture_secrets()
    files = [p for p in sorted(report_dir.rglob("*")) if p.is_file()]
    assert any(p.name == "report.html" for p in files)
    for path in files:
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), default=str)
            assert_no_secret(text, path.name, secrets)
        assert_no_secret(path.read_bytes(), path.name, secrets)
    audit = pq.read_table(report_dir / "admin_audit.parquet").to_pylist()
    (scram,) = [a for a in audit if a["api_name"] == "AlterUserScramCredentials"]  # tansu user create, refused
    assert scram["targets"] == "set SCRAM credentials of User:admin (SCRAM-SHA-256, 8192 iterations)"
    assert scram["outcome"] == "no response" and scram["client_id"] == "tansu-cli"


def test_kafka_4_readiness_of_the_client_pinned_to_0_10(findings: list[dict[str, Any]],
                                                        conn_capture: dict[int, str]) -> None:
    removed = [f for f in by_capture(findings, conn_capture)["tansu-kafka-python-0.10-removed-versions.pcap"]
               if f["kind"] == "removed_in_kafka_4"]
    assert {f["severity"] for f in removed} == {"error"}
    said = sorted(f["detail"].split(" sent ", 1)[1].split(" to ", 1)[0] + " -> " + f["detail"].rsplit(": ", 1)[1]
                  for f in removed)
    assert said == ["1 CreateTopics request(s) at v0 -> it must move to CreateTopics v2 or later.",
                    "1 ListOffsets request(s) at v0 -> it must move to ListOffsets v1 or later.",
                    "1 Produce request(s) at v2 -> it must move to Produce v3 or later.",
                    "1 Produce request(s) at v2 -> it must move to Produce v3 or later."]
    old = [f for f in by_capture(findings, conn_capture)["tansu-kafka-python-0.10-removed-versions.pcap"]
           if f["kind"] == "old_message_format"]
    assert sorted(f["detail"].split(" (client id ")[1].split(")")[0] for f in old) == [
        "kafka-python-0.10-producer-gzip", "kafka-python-0.10-producer-none"]
    assert all(" sent 1 Produce request(s) with record sets in message format v0/v1" in f["detail"]
               and f["severity"] == "warning" for f in old)


def test_clients_parquet_is_what_the_clients_command_says(report_dir: Path, events_dir: Path) -> None:
    """One source for what a client row says: the report's Spark grouping and the command's pyarrow grouping
    feed the same contract/clients.py, so clients.parquet equals the command's inventory of the same events."""
    spark_rows = pq.read_table(report_dir / "clients.parquet").to_pylist()
    command_rows = [c.row() for c in inventory(read_events(events_dir, COLUMNS))]

    def canonical(rows: list[dict[str, Any]]) -> list[str]:
        out = []
        for r in rows:
            r = dict(r, first_seen=r["first_seen"].replace(tzinfo=None), last_seen=r["last_seen"].replace(tzinfo=None))
            out.append(json.dumps(r, sort_keys=True, default=str))
        return sorted(out)

    assert len(spark_rows) > 40 and canonical(spark_rows) == canonical(command_rows)
    old = [r for r in spark_rows if r["client_id"] == "kafka-python-0.10-producer-gzip"]
    assert old and old[0]["message_set_produced"] == 1 and old[0]["removed_in_kafka_4"][0]["move_to"] == 3
    page = (report_dir / "report.html").read_text()
    assert "<table id='clients'>" in page and "kafka-python-0.10-producer-gzip" in page
    assert "<a href='#finding-" in page and ">removed_in_kafka_4</a> ×1" in page


def test_topics_parquet_is_what_the_topics_command_says(report_dir: Path, events_dir: Path) -> None:
    """One source for the topic map: the report's Spark grouping and the command's pyarrow grouping feed the same
    contract/topic_map.py, so topics.parquet equals the command's map of the same events."""
    spark_rows = pq.read_table(report_dir / "topics.parquet").to_pylist()
    found = TopicMap()
    found.add(read_events(events_dir, TOPIC_COLUMNS))
    command_rows = [r.row() for r in found.rows()]

    def canonical(rows: list[dict[str, Any]]) -> list[str]:
        return sorted(json.dumps(dict(r, first_seen=r["first_seen"].replace(tzinfo=None),
                                      last_seen=r["last_seen"].replace(tzinfo=None)), sort_keys=True, default=str)
                      for r in rows)

    assert len(spark_rows) > 40 and canonical(spark_rows) == canonical(command_rows)
    kip848 = [r for r in spark_rows if r["topic"] == "kip848-orders" and r["role"] == "consumer"]
    assert len(kip848) == 4 and {r["group_id"] for r in kip848} == {"kip848-group"}
    page = (report_dir / "report.html").read_text()
    assert "<table id='topic-map'>" in page and "group kip848-group" in page


def test_groups_parquet_lists_every_group_with_its_protocol(report_dir: Path) -> None:
    groups = {g["group_id"]: g for g in pq.read_table(report_dir / "groups.parquet").to_pylist()}
    assert {"inspector-group", "kip848-group", "lagging-group", "storm-group", "mixed-assignors"} <= set(groups)
    kip848, storm, lagging = groups["kip848-group"], groups["storm-group"], groups["lagging-group"]
    assert kip848["protocol"] == "consumer" and kip848["members"] == 4 and kip848["assignors_offered"] == []
    assert storm["protocol"] == "classic" and storm["protocol_types"] == ["consumer"] and storm["members"] == 7
    # mock-cluster-topic-map: a classic, a KIP-848 and a kafka-python group; tm-worker is a member of two
    assert [groups[g]["protocol"] for g in ("tm-billing", "tm-analytics", "tm-audit-readers")] == [
        "classic", "consumer", "classic"]
    assert {c["client_id"] for c in groups["tm-billing"]["clients"]} == {"tm-billing-1", "tm-worker"}
    assert {c["client_id"] for c in groups["tm-analytics"]["clients"]} == {"tm-analytics-1", "tm-worker"}
    assert groups["tm-audit-readers"]["clients"][0]["software"] is None  # kafka-python pinned to ApiVersions v2
    assert groups["mixed-assignors"]["assignors_offered"] == ["range", "roundrobin"]
    assert groups["mixed-assignors"]["assignors_chosen"] == ["roundrobin"]
    assert len(storm["clients"]) == 7 and {c["software"] for c in storm["clients"]} == {"kafka-python 3.0.12"}
    # one source with rebalances.parquet: the same rebalances per group
    rebalances = pq.read_table(report_dir / "rebalances.parquet").to_pylist()
    for g in groups.values():
        assert g["rebalances"] == sum(r["group_id"] == g["group_id"] for r in rebalances), g["group_id"]
    # the lag: the slow consumer's partitions are behind, each owned by it
    assert lagging["lag"] > 100 and {p["member_client_id"] for p in lagging["lagging"]} == {"slow-consumer"}
    assert sum(p["lag"] for p in lagging["lagging"]) == lagging["lag"]
    page = (report_dir / "report.html").read_text()
    assert "<table id='groups-inventory'>" in page and "owned by slow-consumer" in page


def test_the_lag_names_the_member_that_owned_each_partition(report_dir: Path) -> None:
    """Independently of the assignments the owners come from: a consumer commits the partitions it owns, so at
    each OffsetCommit the owner's client (from SyncGroup or heartbeat assignments) is the committing client."""
    lag = pq.read_table(report_dir / "lag.parquet").to_pylist()
    commits = [r for r in lag if r["source"] == "OffsetCommit"]
    assert len(commits) > 100
    assert all(r["member_client"] == r["client"] and r["member_id"] for r in commits)
    assert {r["member_client_id"] for r in commits if r["group_id"] == "kip848-group"} >= {
        "kip848-member-1", "kip848-member-3"}


def test_classic_groups_with_members_that_can_move(findings: list[dict[str, Any]]) -> None:
    """One info finding per classic consumer group with a member on software that runs the consumer protocol
    (the captures' confluent-kafka 2.16.1, librdkafka 2.16.0), naming it; none for the KIP-848 group."""
    moves = [f for f in findings if f["kind"] == "classic_group_can_move"]
    assert sorted(f["group_id"] for f in moves) == ["inspector-group", "lagging-group", "mixed-assignors",
                                                    "mock-group", "tm-billing"]
    assert all(f["severity"] == "info" and "group.protocol=consumer" in f["detail"] for f in moves)
    inspector = next(f for f in moves if f["group_id"] == "inspector-group")
    assert "confluent-member (127.0.0.1; confluent-kafka-python 2.16.1-rdkafka-2.16.0)" in inspector["detail"]
    assert "Not known to support it: aiokafka-member" in inspector["detail"]


def test_removed_versions_equal_the_clients_readiness_on_every_capture(findings: list[dict[str, Any]],
                                                                      events_dir: Path) -> None:
    """Every removed (API, version) in a client's Kafka 4.0 readiness (``clients``) has its ``removed_in_kafka_4``
    finding, and every such finding is one of them: capture by capture, and over the whole dataset."""
    events = pq.read_table(events_dir / "events", columns=["capture", "conn_id", "correlation_id", "direction",
                                                           "client_ip", "client_id", "api_name",
                                                           "api_version"]).to_pylist()
    message = {(r["capture"], r["conn_id"], r["correlation_id"]): r for r in events if r["direction"] == "request"}
    found: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    every: set[tuple[Any, ...]] = set()
    for f in (f for f in findings if f["kind"] == "removed_in_kafka_4"):
        named = {(m["client_ip"], m["client_id"], m["api_name"], m["api_version"]) for m in
                 (message[(e["capture"], e["conn_id"], e["correlation_id"])] for e in f["evidence"])}
        assert len(named) == 1, f  # one problem per finding
        every |= named
        for e in f["evidence"]:
            found[e["capture"]] |= named

    def readiness(target: Path) -> set[tuple[Any, ...]]:
        out = subprocess.run([str(KAFKA_INSPECTOR), "clients", str(target), "--format", "json"], check=True,
                             capture_output=True, text=True, timeout=120).stdout
        return {(c["client_ip"], c["client_id"], r["api_name"], v) for c in json.loads(out)
                for r in c["removed_in_kafka_4"] for v in r["versions"]}

    for capture in sorted(PCAPS.glob("*.pcap")):
        assert readiness(capture) == found[capture.name], capture.name
    assert readiness(events_dir) == every and every
