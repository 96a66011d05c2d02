"""Version and endpoint discipline.

* ``unadvertised_version``: a request at a version (or of an API) the broker did not advertise in its
  ApiVersions response on that connection (or, without one there, in its latest ApiVersions response
  on another connection to the same ``ip:port``);
* KIP-919 controller-direct traffic: ``endpoint_type_mismatch`` (DescribeCluster answered
  MISMATCHED_ENDPOINT_TYPE (114) or UNSUPPORTED_ENDPOINT_TYPE (115)) and ``controller_direct_access``
  (clients that reach a controller endpoint directly, DescribeCluster ``EndpointType`` 2).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    ENDPOINT_TYPES,
    MISMATCHED_ENDPOINT_TYPE,
    UNSUPPORTED_ENDPOINT_TYPE,
)
from pipelines.events_dataset import api_versions, asof, collect_evidence, evidence, exchanges, with_endpoints
from pipelines.findings import as_findings, client_subject, error_label

DESCRIBE_CLUSTER_REQUEST_DDL = body_schemas.DESCRIBE_CLUSTER_REQUEST
DESCRIBE_CLUSTER_RESPONSE_DDL = body_schemas.DESCRIBE_CLUSTER_RESPONSE


def _advertised(events: DataFrame) -> DataFrame:
    """Successful ApiVersions exchanges: capture, conn_id, broker_ip, broker_port, ts (of the response),
    adv_id (struct naming the exchange), ApiKeys."""
    av = api_versions(events).where(
        (F.col("r_error_code") == 0) & (F.col("r_decode_status") == "ok")
        & (F.size(F.coalesce(F.col("rb.ApiKeys"), F.array())) > 0))
    return av.select("capture", "conn_id", "broker_ip", "broker_port", F.col("r_ts").alias("ts"),
                     F.struct(F.col("capture").alias("capture"), F.col("conn_id").alias("conn_id"),
                              F.col("correlation_id").alias("correlation_id"), F.col("r_ts").alias("ts")
                              ).alias("adv_id"),
                     F.col("rb.ApiKeys").alias("keys"))


def unadvertised_version(events: DataFrame) -> DataFrame:
    adv = _advertised(events)
    reqs = events.where((F.col("direction") == "request") & (F.col("api_key") != API_VERSIONS)
                        & F.col("envelope_correlation_id").isNull() & F.col("api_key").isNotNull()
                        & F.col("api_version").isNotNull()).select(
        "ts", "capture", "conn_id", "correlation_id", "client_ip", "client_port", "broker_ip", "broker_port",
        "client_id", "api_key", "api_name", "api_version")
    # Checked per connection, API and version (a million requests are a few thousand of those); the requests
    # of the few found wanting are then taken back for the finding.
    used = reqs.groupBy("capture", "conn_id", "broker_ip", "broker_port", "api_key", "api_version").agg(
        F.min("ts").alias("ts"))
    # Which ApiVersions answer governs a connection: its own (the last one), else the broker's latest one
    # before the connection's first request.
    conns = used.groupBy("capture", "conn_id", "broker_ip", "broker_port").agg(F.min("ts").alias("ts"))
    own = adv.groupBy("capture", "conn_id").agg(F.max_by("adv_id", "ts").alias("conn_adv"))
    conns = conns.join(own, ["capture", "conn_id"], "left")
    conns = asof(conns, adv, ["broker_ip", "broker_port"], "adv_id", "broker_adv")
    conns = conns.select("capture", "conn_id", "conn_adv", F.coalesce("conn_adv", "broker_adv").alias("adv")).where(
        F.col("adv").isNotNull())
    ranges = adv.select("adv_id", F.explode("keys").alias("k")).select(
        F.col("adv_id").alias("adv"), F.col("k.ApiKey").alias("api_key"), F.col("k.MinVersion").alias("min_v"),
        F.col("k.MaxVersion").alias("max_v"))
    checked = used.join(conns, ["capture", "conn_id"]).join(ranges, ["adv", "api_key"], "left")
    wanting = checked.where(F.col("min_v").isNull() | (F.col("api_version") < F.col("min_v"))
                            | (F.col("api_version") > F.col("max_v"))).select(
        "capture", "conn_id", "api_key", "api_version", "conn_adv", "adv", "min_v", "max_v")
    bad = with_endpoints(reqs.join(wanting, ["capture", "conn_id", "api_key", "api_version"]))
    bad = bad.withColumn("same_conn", F.col("conn_adv").isNotNull())
    agg = bad.groupBy("client_ip", "client_id", "broker", "api_name", "api_version", "min_v", "max_v").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.countDistinct("conn_id").alias("conns"), F.min("client").alias("one_client"),
        F.max(F.col("same_conn").cast("int")).alias("same_conn"), F.min("adv.ts").alias("adv_ts"),
        collect_evidence(evidence()).alias("evidence"))
    advertised = F.when(F.col("min_v").isNull(), F.concat(F.lit("does not advertise "), F.col("api_name"),
                                                          F.lit(" at all"))).otherwise(F.concat(
        F.lit("advertises "), F.col("api_name"), F.lit(" v"), F.col("min_v").cast("string"), F.lit("-"),
        F.col("max_v").cast("string")))
    detail = F.concat(
        F.col("client_ip"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(", "),
        F.col("conns").cast("string"), F.lit(" connection(s)) sent "), F.col("n").cast("string"), F.lit(" "),
        F.col("api_name"), F.lit(" v"), F.col("api_version").cast("string"), F.lit(" request(s) to "),
        F.col("broker"), F.lit(", which "), advertised,
        F.when(F.col("same_conn") == 1, F.lit(" in its ApiVersions response on that connection")).otherwise(
            F.concat(F.lit(" in its ApiVersions response of "), F.date_format("adv_ts", "yyyy-MM-dd HH:mm:ss.SSS"),
                     F.lit(" on another connection"))),
        F.lit(". The client ignores version negotiation (or is pinned to a version); expect UNSUPPORTED_VERSION "
              "(35) or a closed connection."),
    )
    return as_findings(agg, "unadvertised_version", "warning", detail,
                       client=F.when(F.col("conns") == 1, F.col("one_client")),
                       subject=client_subject(F.col("api_name"), F.lit(" v"), F.col("api_version").cast("string")))


def _endpoint_type(col: str) -> Column:
    names = F.create_map(*[x for k, v in ENDPOINT_TYPES.items() for x in (F.lit(k), F.lit(v))])
    return F.coalesce(F.try_element_at(names, F.col(col).cast("int")), F.concat(F.lit("type "), F.col(col).cast(
        "string")), F.lit("broker (default)"))


def endpoint_type_mismatch(events: DataFrame) -> DataFrame:
    dc = with_endpoints(exchanges(events, [DESCRIBE_CLUSTER], DESCRIBE_CLUSTER_REQUEST_DDL,
                                  DESCRIBE_CLUSTER_RESPONSE_DDL)).where(
        F.col("r_error_code").isin(MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE))
    dc = dc.withColumn("wanted", _endpoint_type("qb.EndpointType")).withColumn("code", F.col("r_error_code"))
    agg = dc.groupBy("client", "client_id", "broker", "code", "wanted").agg(
        F.min("ts").alias("ts_first"), F.max(F.coalesce("r_ts", "ts")).alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.array_sort(F.collect_set("rb.ErrorMessage")).alias("messages"),
        collect_evidence(evidence()).alias("evidence"))
    advice = F.when(F.col("code") == MISMATCHED_ENDPOINT_TYPE, F.concat(
        F.lit(": the client asked a "), F.when(F.col("wanted") == "controller", F.lit("broker")).otherwise(
            F.lit("controller")), F.lit(" listener for "), F.col("wanted"), F.lit(" endpoints. Point "),
        F.when(F.col("wanted") == "controller", F.lit("--bootstrap-controller at the controller listener")).otherwise(
            F.lit("--bootstrap-server at a broker listener")), F.lit(" (KIP-919)."))).otherwise(
        F.lit(": this node does not support that endpoint type (KIP-919); use a broker endpoint or upgrade."))
    detail = F.concat(
        F.lit("DescribeCluster from "), F.col("client"), F.lit(" (client id "),
        F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") to "), F.col("broker"), F.lit(" asked for "),
        F.col("wanted"), F.lit(" endpoints and got "), error_label(F.col("code")), F.lit(" "),
        F.col("n").cast("string"), F.lit(" time(s)"),
        F.when(F.size("messages") > 0, F.concat(F.lit(" ('"), F.array_join("messages", "', '"), F.lit("')"))
               ).otherwise(F.lit("")), advice,
    )
    return as_findings(agg, "endpoint_type_mismatch", "warning", detail,
                       subject=F.concat(F.col("wanted"), F.lit(" endpoints: "), error_label(F.col("code"))))


def controller_direct_access(events: DataFrame) -> DataFrame:
    dc = with_endpoints(exchanges(events, [DESCRIBE_CLUSTER], DESCRIBE_CLUSTER_REQUEST_DDL,
                                  DESCRIBE_CLUSTER_RESPONSE_DDL)).where(
        (F.col("qb.EndpointType") == 2) & (F.coalesce(F.col("r_error_code"), F.lit(0)) == 0))
    agg = dc.groupBy("client_ip", "client_id", "broker").agg(
        F.min("ts").alias("ts_first"), F.max(F.coalesce("r_ts", "ts")).alias("ts_last"),
        F.count(F.lit(1)).alias("n"), F.countDistinct("conn_id").alias("conns"),
        F.min("client").alias("one_client"), collect_evidence(evidence()).alias("evidence"))
    detail = F.concat(
        F.col("client_ip"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")),
        F.lit(") talks to the controller endpoint "), F.col("broker"), F.lit(" directly ("),
        F.col("n").cast("string"), F.lit(" DescribeCluster request(s) with EndpointType=controller over "),
        F.col("conns").cast("string"),
        F.lit(" connection(s), KIP-919): an admin tool bypassing the brokers; make sure that is intended and "
              "that the controller listener is not reachable by ordinary clients."),
    )
    return as_findings(agg, "controller_direct_access", "info", detail,
                       client=F.when(F.col("conns") == 1, F.col("one_client")),
                       subject=client_subject(F.lit("EndpointType=controller")))
