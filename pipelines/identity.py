"""Broker identity learned from the traffic itself, and the KIP-1242 checks built on it.

Who answers at ``ip:port``? Metadata and DescribeCluster responses list ``ClusterId`` and every
broker's ``NodeId``/``Host``/``Port``; FindCoordinator responses name the coordinator's
``NodeId``/``Host``/``Port``. A connection that received a Metadata/DescribeCluster response is itself
an endpoint of that cluster. Hosts that are IP literals map directly; names go through a hosts table
(``--hosts FILE``: "name ip" lines). Each observation is timestamped, so the identity of an endpoint
is known *at a time*: a broker restarted on the same port under another node id or cluster id shows up
as a change.

Detectors:

* ``misrouted_api_versions``: an ApiVersions v5+ request whose ``ClusterId``/``NodeId`` do not match the
  broker actually reached (whatever the broker answered);
* ``api_versions_one_sided_identity``: only one of ``ClusterId``/``NodeId`` set (the broker must answer
  INVALID_REQUEST);
* ``rebootstrap_required``: responses carrying REBOOTSTRAP_REQUIRED;
* ``endpoint_identity_changed``: the same ``ip:port`` advertised under another node id or cluster id
  over time (needs no KIP-1242 client).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from contract import body_schemas
from contract.kafka import (
    DESCRIBE_CLUSTER,
    FIND_COORDINATOR,
    INVALID_REQUEST,
    METADATA,
    REBOOTSTRAP_REQUIRED,
)
from pipelines.events_dataset import (
    api_versions,
    asof,
    collect_evidence,
    endpoint,
    evidence,
    merge_evidence,
    parse_body,
    responses,
    with_endpoints,
)
from pipelines.findings import as_findings, error_label, listed

METADATA_RESPONSE_DDL = body_schemas.METADATA_RESPONSE
DESCRIBE_CLUSTER_RESPONSE_DDL = body_schemas.DESCRIBE_CLUSTER_BROKERS_RESPONSE
FIND_COORDINATOR_RESPONSE_DDL = body_schemas.FIND_COORDINATOR_RESPONSE

HOSTS_SCHEMA = StructType([StructField("name", StringType(), False), StructField("ip", StringType(), False)])

OBSERVATION_COLUMNS = ("ip", "port", "node_id", "cluster_id", "ts", "source", "capture", "conn_id", "correlation_id")

#: The changes of one episode ``endpoint_identity_changed``'s detail names one by one.
_MAX_CHANGES = 10

_IPV4 = r"^[0-9]{1,3}(\.[0-9]{1,3}){3}$"


def read_hosts(path: str) -> list[tuple[str, str]]:
    """``name ip`` per line (``#`` comments, blank lines and extra names after the ip are allowed:
    ``/etc/hosts`` order "ip name..." is recognised too)."""
    pairs: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            words = raw.split("#", 1)[0].split()
            if len(words) < 2:
                continue
            if _looks_like_ip(words[0]) and not _looks_like_ip(words[1]):
                pairs.extend((name.lower(), words[0]) for name in words[1:])
            else:
                pairs.append((words[0].lower(), words[1]))
    return pairs


def _looks_like_ip(word: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(word.strip("[]"))
    except ValueError:
        return False
    return True


def hosts_frame(spark: SparkSession, pairs: Iterable[tuple[str, str]]) -> DataFrame:
    return spark.createDataFrame([(n.lower(), ip) for n, ip in pairs], HOSTS_SCHEMA)


def _resolve(adv: DataFrame, hosts: DataFrame | None) -> DataFrame:
    """``host`` -> ``ip``: IP literals directly, names through ``hosts`` (unresolved names are dropped)."""
    host = F.regexp_replace(F.col("host"), r"^\[(.*)\]$", "$1")
    literal = host.rlike(_IPV4) | (F.instr(host, ":") > 0)
    direct = adv.where(literal).withColumn("ip", host)
    if hosts is None:
        return direct.drop("host")
    named = adv.where(~literal).withColumn("_name", F.lower(F.col("host")))
    h = F.broadcast(hosts.select(F.col("name").alias("_name"), "ip"))
    resolved = named.join(h, "_name").drop("_name")
    return direct.unionByName(resolved).drop("host")


def identity_observations(events: DataFrame, hosts: DataFrame | None = None) -> DataFrame:
    """Every statement about who is at ``ip:port``: columns ``OBSERVATION_COLUMNS``.

    ``node_id`` or ``cluster_id`` may be null (FindCoordinator names no cluster; a connection's own
    endpoint learns only the cluster id of the Metadata response it received).
    """
    ok = F.col("decode_status") == "ok"
    base = ["ts", "capture", "conn_id", "correlation_id"]

    md = parse_body(responses(events, [METADATA]).where(F.col("body").isNotNull()), METADATA_RESPONSE_DDL, "rb")
    md_adv = md.select(*base, F.lit("Metadata response").alias("source"), F.col("rb.ClusterId").alias("cluster_id"),
                       F.explode("rb.Brokers").alias("x")).select(
        *base, "source", "cluster_id", F.col("x.NodeId").alias("node_id"), F.col("x.Host").alias("host"),
        F.col("x.Port").alias("port"))
    md_self = md.where(ok & F.col("rb.ClusterId").isNotNull()).select(
        *base, F.lit("Metadata response (its own connection)").alias("source"),
        F.col("rb.ClusterId").alias("cluster_id"), F.lit(None).cast("int").alias("node_id"),
        F.col("broker_ip").alias("ip"), F.col("broker_port").alias("port"))

    dc = parse_body(responses(events, [DESCRIBE_CLUSTER]).where(F.col("body").isNotNull()),
                    DESCRIBE_CLUSTER_RESPONSE_DDL, "rb").where(F.coalesce(F.col("rb.ErrorCode"), F.lit(0)) == 0)
    dc_adv = dc.select(*base, F.lit("DescribeCluster response").alias("source"),
                       F.col("rb.ClusterId").alias("cluster_id"), F.explode("rb.Brokers").alias("x")).select(
        *base, "source", "cluster_id", F.col("x.BrokerId").alias("node_id"), F.col("x.Host").alias("host"),
        F.col("x.Port").alias("port"))
    dc_self = dc.where(ok & F.col("rb.ClusterId").isNotNull()).select(
        *base, F.lit("DescribeCluster response (its own connection)").alias("source"),
        F.col("rb.ClusterId").alias("cluster_id"), F.lit(None).cast("int").alias("node_id"),
        F.col("broker_ip").alias("ip"), F.col("broker_port").alias("port"))

    fc = parse_body(responses(events, [FIND_COORDINATOR]).where(F.col("body").isNotNull()),
                    FIND_COORDINATOR_RESPONSE_DDL, "rb")
    fc_one = fc.where((F.coalesce(F.col("rb.ErrorCode"), F.lit(-1)) == 0) & (F.col("rb.NodeId") >= 0)).select(
        *base, F.lit("FindCoordinator response").alias("source"), F.lit(None).cast("string").alias("cluster_id"),
        F.col("rb.NodeId").alias("node_id"), F.col("rb.Host").alias("host"), F.col("rb.Port").alias("port"))
    fc_many = fc.select(*base, F.explode("rb.Coordinators").alias("x")).where(
        (F.col("x.ErrorCode") == 0) & (F.col("x.NodeId") >= 0)).select(
        *base, F.lit("FindCoordinator response").alias("source"), F.lit(None).cast("string").alias("cluster_id"),
        F.col("x.NodeId").alias("node_id"), F.col("x.Host").alias("host"), F.col("x.Port").alias("port"))

    advertised = md_adv.unionByName(dc_adv).unionByName(fc_one).unionByName(fc_many).where(
        F.col("host").isNotNull() & (F.col("host") != "") & (F.col("port") > 0))
    resolved = _resolve(advertised, hosts)
    return resolved.unionByName(md_self).unionByName(dc_self).select(*OBSERVATION_COLUMNS)


def _obs_struct(field: str) -> Column:
    return F.struct(F.col(field).alias("value"), F.col("ts").alias("ts"), F.col("source").alias("source"),
                    F.col("conn_id").alias("conn_id"), F.col("correlation_id").alias("correlation_id"))


def _identity_at(df: DataFrame, observations: DataFrame) -> DataFrame:
    """Add ``known_node`` and ``known_cluster`` (structs: value, ts, source, conn_id, correlation_id): the
    identity of ``broker_ip:broker_port`` at each row's ``ts``."""
    obs = observations.withColumnRenamed("ip", "broker_ip").withColumnRenamed("port", "broker_port")
    nodes = obs.where(F.col("node_id").isNotNull()).withColumn("known", _obs_struct("node_id"))
    clusters = obs.where(F.col("cluster_id").isNotNull()).withColumn("known", _obs_struct("cluster_id"))
    df = asof(df, nodes, ["broker_ip", "broker_port"], "known", "known_node")
    return asof(df, clusters, ["broker_ip", "broker_port"], "known", "known_cluster")


def _answer(prefix: str = "r_") -> Column:
    """How the broker answered an exchange, for a detail sentence."""
    code = F.col(f"{prefix}error_code")
    return (
        F.when(F.col(f"{prefix}ts").isNull(), F.lit("did not answer (no response in the capture)"))
        .when(code.isNull(), F.concat(F.lit("sent a response that could not be decoded ("),
                                      F.col(f"{prefix}decode_status"), F.lit(")")))
        .otherwise(F.concat(F.lit("answered "), error_label(code)))
    )


def _api_versions_identity(events: DataFrame) -> DataFrame:
    av = with_endpoints(api_versions(events)).where(F.col("api_version") >= 5)
    return (
        av.withColumn("has_cluster", F.col("cluster_id").isNotNull() & (F.col("cluster_id") != ""))
        .withColumn("has_node", F.col("node_id").isNotNull() & (F.col("node_id") >= 0))
    )


def _named(has_cluster: Column, has_node: Column) -> Column:
    cluster = F.coalesce(F.col("cluster_id"), F.lit("null"))
    node = F.coalesce(F.col("node_id").cast("string"), F.lit("null"))
    return (
        F.when(has_cluster & has_node, F.concat(F.lit("node "), node, F.lit(" of cluster "), cluster))
        .when(has_cluster, F.concat(F.lit("cluster "), cluster, F.lit(" (NodeId "), node, F.lit(")")))
        .otherwise(F.concat(F.lit("node "), node, F.lit(" (ClusterId "), cluster, F.lit(")")))
    )


def misrouted_api_versions(events: DataFrame, observations: DataFrame) -> DataFrame:
    """ApiVersions v5+ naming a ClusterId/NodeId other than the broker's at that ``ip:port`` and time."""
    av = _api_versions_identity(events).where(F.col("has_cluster") | F.col("has_node"))
    av = _identity_at(av, observations)
    node_bad = F.col("has_node") & F.col("known_node.value").isNotNull() & (
        F.col("known_node.value") != F.col("node_id"))
    cluster_bad = F.col("has_cluster") & F.col("known_cluster.value").isNotNull() & (
        F.col("known_cluster.value") != F.col("cluster_id"))
    bad = av.where(node_bad | cluster_bad)
    actual = F.concat(
        F.lit("node "), F.coalesce(F.col("known_node.value").cast("string"), F.lit("?")),
        F.lit(" of cluster "), F.coalesce(F.col("known_cluster.value"), F.lit("?")),
        F.lit(" (learned from the "),
        F.when(node_bad, F.col("known_node.source")).otherwise(F.col("known_cluster.source")),
        F.lit(" at "),
        F.date_format(F.when(node_bad, F.col("known_node.ts")).otherwise(F.col("known_cluster.ts")),
                      "yyyy-MM-dd HH:mm:ss.SSS"),
        F.lit(")"),
    )
    caught = F.col("r_error_code") == REBOOTSTRAP_REQUIRED
    detail = F.concat(
        F.lit("ApiVersions v"), F.col("api_version").cast("string"), F.lit(" from "), F.col("client"),
        F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") asks for "),
        _named(F.col("has_cluster"), F.col("has_node")), F.lit(", but "), F.col("broker"), F.lit(" is "), actual,
        F.lit("; the broker "), _answer(),
        F.when(caught, F.lit(". The broker caught it: the client must rebootstrap."))
        .otherwise(F.lit(". A KIP-1242 broker answers REBOOTSTRAP_REQUIRED (129) here; this connection reached "
                         "the wrong broker (stale metadata, or the address now belongs to another broker).")),
    )
    return as_findings(
        bad, "misrouted_api_versions", F.when(caught, F.lit("warning")).otherwise(F.lit("error")), detail,
        ts_first="ts", ts_last=F.coalesce(F.col("r_ts"), F.col("ts")),
        evidence=F.array(evidence()), subject=F.concat(F.lit("asks for "), _named(F.col("has_cluster"),
                                                                                  F.col("has_node"))),
    )


def api_versions_one_sided_identity(events: DataFrame) -> DataFrame:
    """ApiVersions v5+ with only ClusterId or only NodeId set: the broker must answer INVALID_REQUEST (42)."""
    av = _api_versions_identity(events).where(F.col("has_cluster") != F.col("has_node"))
    rejected = F.col("r_error_code") == INVALID_REQUEST
    detail = F.concat(
        F.lit("ApiVersions v"), F.col("api_version").cast("string"), F.lit(" from "), F.col("client"),
        F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") to "), F.col("broker"),
        F.lit(" sets only "),
        F.when(F.col("has_cluster"), F.concat(F.lit("ClusterId "), F.col("cluster_id"), F.lit(" (NodeId -1)")))
        .otherwise(F.concat(F.lit("NodeId "), F.col("node_id").cast("string"), F.lit(" (ClusterId null)"))),
        F.lit("; KIP-1242 requires both or neither, and the broker must answer INVALID_REQUEST (42). It "),
        _answer(),
        F.when(rejected, F.lit(". Fix the client: it sends half an identity."))
        .otherwise(F.lit(". The broker accepted or dropped a malformed identity check.")),
    )
    return as_findings(
        av, "api_versions_one_sided_identity", F.when(rejected, F.lit("warning")).otherwise(F.lit("error")),
        detail, ts_first="ts", ts_last=F.coalesce(F.col("r_ts"), F.col("ts")), evidence=F.array(evidence()),
        subject=F.when(F.col("has_cluster"), F.concat(F.lit("only ClusterId "), F.col("cluster_id"))).otherwise(
            F.concat(F.lit("only NodeId "), F.col("node_id").cast("string"))),
    )


def rebootstrap_required(events: DataFrame) -> DataFrame:
    """Responses with REBOOTSTRAP_REQUIRED (129), per client connection, broker and API."""
    r = with_endpoints(events.where((F.col("direction") == "response")
                                    & (F.col("error_code") == REBOOTSTRAP_REQUIRED)))
    agg = r.groupBy("client", "broker", "api_name").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.min("client_id").alias("client_id"),
        collect_evidence(evidence()).alias("evidence"))
    detail = F.concat(
        F.col("broker"), F.lit(" answered "), F.col("n").cast("string"), F.lit(" "), F.col("api_name"),
        F.lit(" request(s) of "), F.col("client"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")),
        F.lit(") with REBOOTSTRAP_REQUIRED (129): the client's metadata is stale (it reached a broker other than "
              "the one it meant); it must rebootstrap from its bootstrap servers (KIP-1242/KIP-1102)."),
    )
    return as_findings(agg, "rebootstrap_required", "warning", detail, subject="api_name")


def _change(label: str) -> Callable[[Column], Column]:
    """One change of an ``endpoint_identity_changed`` episode, as its detail tells it: the old identity's last
    statement, the new one's first."""
    def said(c: Column) -> Column:
        return F.concat(F.lit(f"{label} "), F.col("prev"), F.lit(" (last said by a "), c["prev_source"],
                        F.lit(" at "), F.date_format(c["prev_ts"], "yyyy-MM-dd HH:mm:ss.SSS"),
                        F.lit(f"), then {label} "), F.col("value"), F.lit(" (first said by a "), c["source"],
                        F.lit(" at "), F.date_format(c["ts"], "yyyy-MM-dd HH:mm:ss.SSS"), F.lit(")"))
    return said


def endpoint_identity_changed(observations: DataFrame) -> DataFrame:
    """The same ``ip:port`` advertised under another node id or cluster id than before."""
    parts = []
    for field, label in (("node_id", "node id"), ("cluster_id", "cluster id")):
        o = observations.where(F.col(field).isNotNull()).select(
            "ip", "port", "ts", "source", "capture", "conn_id", "correlation_id",
            F.col(field).cast("string").alias("value"))
        w = Window.partitionBy("ip", "port").orderBy("ts", "capture", "conn_id", "correlation_id")
        o = (o.withColumn("prev", F.lag("value").over(w)).withColumn("prev_ts", F.lag("ts").over(w))
             .withColumn("prev_source", F.lag("source").over(w))
             .withColumn("prev_ev", F.lag(evidence()).over(w)))
        changes = o.where(F.col("prev").isNotNull() & (F.col("prev") != F.col("value")))
        agg = changes.groupBy("ip", "port", "prev", "value").agg(
            F.min("prev_ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
            F.array_sort(F.collect_list(F.struct("ts", "source", "prev_ts", "prev_source"))).alias("changes"),
            merge_evidence(F.array("prev_ev", evidence())).alias("evidence"))

        each = listed("changes", _MAX_CHANGES, "; ", _change(label))
        detail = F.concat(
            endpoint("ip", "port"),
            F.when(F.col("n") == 1, F.concat(F.lit(f" changed {label}: it was "), each)).otherwise(F.concat(
                F.lit(f" changed {label} from "), F.col("prev"), F.lit(" to "), F.col("value"), F.lit(" "),
                F.col("n").cast("string"), F.lit(" times: "), each)),
            F.lit(". A broker was replaced or restarted under another identity at this address: clients "
                  "holding the old metadata now talk to a different broker (KIP-1242 ApiVersions v5 lets "
                  "brokers refuse them)."),
        )
        parts.append(as_findings(agg, "endpoint_identity_changed", "warning", detail, client=None,
                                 broker=endpoint("ip", "port"),
                                 subject=F.concat(F.lit(f"{label} "), F.col("prev"), F.lit(" -> "), F.col("value"))))
    return parts[0].unionByName(parts[1])
