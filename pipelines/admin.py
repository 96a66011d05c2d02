"""Administrative traffic: KIP-4 admin writes (an audit table) and KIP-590 Envelope forwarding failures.

* ``admin_audit(events)``: one row per admin write request (CreateTopics, DeleteTopics, CreateAcls,
  DeleteAcls, AlterConfigs, IncrementalAlterConfigs, CreatePartitions, AlterClientQuotas,
  Create/Renew/ExpireDelegationToken), with who (client, client id, and the principal: the SASL one of the
  connection, or the forwarded request's),
  what (targets), and the outcome;
* ``admin_write_failed``: audit rows whose response carries error codes;
* ``admin_write_unanswered``: audit rows without a (decodable) response;
* ``envelope_forwarding_failed``: Envelope responses with NOT_CONTROLLER (41) or
  CLUSTER_AUTHORIZATION_FAILED (31), with the inner request and its principal.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract import body_schemas
from contract.kafka import (
    ACL_OPERATIONS,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    CLUSTER_AUTHORIZATION_FAILED,
    CONFIG_OPERATIONS,
    CONFIG_RESOURCE_TYPES,
    ENVELOPE,
    NOT_CONTROLLER,
    ApiKey,
)
from pipelines.events_dataset import collect_evidence, evidence, exchanges, with_endpoints
from pipelines.findings import as_findings, error_label, error_list, listed, tallied
from pipelines.kafka_rules import ADMIN_WRITES

#: Every admin write's request fields the audit reads (one schema: absent fields parse as null).
ADMIN_REQUEST_DDL = body_schemas.ADMIN_WRITE_REQUEST

#: ScramMechanism's values in AlterUserScramCredentials.
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}

ENVELOPE_REQUEST_DDL = body_schemas.ENVELOPE_REQUEST

AUDIT_SCHEMA = StructType(
    [
        StructField("ts", TimestampType()),
        StructField("capture", StringType()),
        StructField("conn_id", LongType()),
        StructField("correlation_id", IntegerType()),
        StructField("client", StringType()),
        StructField("client_id", StringType()),
        StructField("principal", StringType()),
        StructField("forwarded", BooleanType()),
        StructField("broker", StringType()),
        StructField("api_name", StringType()),
        StructField("api_version", ShortType()),
        StructField("targets", StringType()),
        StructField("validate_only", BooleanType()),
        StructField("outcome", StringType()),
        StructField("error_codes", ArrayType(ShortType())),
        StructField("latency_ms", DoubleType()),
    ]
)


def _enum(mapping: dict[int, str], col: Column) -> Column:
    names = F.create_map(*[x for k, v in mapping.items() for x in (F.lit(k), F.lit(v))])
    return F.coalesce(F.try_element_at(names, col.cast("int")), col.cast("string"), F.lit("?"))


def _join(items: Column, fn: Callable[[Column], Column]) -> Column:
    return F.array_join(F.transform(F.coalesce(items, F.array()), fn), ", ")


def _targets() -> Column:
    """What an admin write touches, as one readable string per API."""
    q = "qb"
    key = F.col("api_key")
    topics_created = _join(F.col(f"{q}.Topics"), lambda t: F.concat(
        F.lit("topic "), t["Name"], F.lit(" ("), F.coalesce(t["NumPartitions"].cast("string"), F.lit("?")),
        F.lit(" partitions, RF "), F.coalesce(t["ReplicationFactor"].cast("string"), F.lit("?")), F.lit(")")))
    topics_deleted = F.when(F.size(F.coalesce(F.col(f"{q}.TopicNames"), F.array())) > 0,
                            _join(F.col(f"{q}.TopicNames"), lambda n: F.concat(F.lit("topic "), n))).otherwise(
        _join(F.col(f"{q}.Topics"), lambda t: F.concat(F.lit("topic "), F.coalesce(t["Name"], F.lit("(by id)")))))
    acls_created = _join(F.col(f"{q}.Creations"), lambda c: F.concat(
        _enum(ACL_PERMISSIONS, c["PermissionType"]), F.lit(" "), F.coalesce(c["Principal"], F.lit("?")),
        F.lit(" "), _enum(ACL_OPERATIONS, c["Operation"]), F.lit(" on "), _enum(ACL_RESOURCE_TYPES, c["ResourceType"]),
        F.lit(":"), F.coalesce(c["ResourceName"], F.lit("?")), F.lit(" from host "), F.coalesce(c["Host"], F.lit("?"))))
    acls_deleted = _join(F.col(f"{q}.Filters"), lambda c: F.concat(
        F.lit("ACLs matching "), _enum(ACL_PERMISSIONS, c["PermissionType"]), F.lit(" "),
        F.coalesce(c["PrincipalFilter"], F.lit("*")), F.lit(" "), _enum(ACL_OPERATIONS, c["Operation"]),
        F.lit(" on "), _enum(ACL_RESOURCE_TYPES, c["ResourceTypeFilter"]), F.lit(":"),
        F.coalesce(c["ResourceNameFilter"], F.lit("*"))))
    configs = _join(F.col(f"{q}.Resources"), lambda r: F.concat(
        _enum(CONFIG_RESOURCE_TYPES, r["ResourceType"]), F.lit(":"), F.coalesce(r["ResourceName"], F.lit("")),
        F.lit(" {"), F.array_join(F.transform(F.coalesce(r["Configs"], F.array()), lambda c: F.concat(
            F.when(c["ConfigOperation"].isNotNull(),
                   F.concat(_enum(CONFIG_OPERATIONS, c["ConfigOperation"]), F.lit(" "))).otherwise(F.lit("")),
            c["Name"], F.lit("="), F.coalesce(c["Value"], F.lit("null")))), ", "), F.lit("}")))
    partitions = _join(F.col(f"{q}.Topics"), lambda t: F.concat(
        F.lit("topic "), t["Name"], F.lit(" -> "), F.coalesce(t["Count"].cast("string"), F.lit("?")),
        F.lit(" partitions")))
    quotas = _join(F.col(f"{q}.Entries"), lambda e: F.concat(
        F.array_join(F.transform(F.coalesce(e["Entity"], F.array()), lambda x: F.concat(
            x["EntityType"], F.lit("="), F.coalesce(x["EntityName"], F.lit("<default>")))), ","),
        F.lit(" {"), F.array_join(F.transform(F.coalesce(e["Ops"], F.array()), lambda o: F.when(
            o["Remove"], F.concat(F.lit("remove "), o["Key"])).otherwise(
            F.concat(o["Key"], F.lit("="), o["Value"].cast("string")))), ", "), F.lit("}")))
    token_create = F.concat(
        F.lit("token for owner "), F.coalesce(F.concat(F.col(f"{q}.OwnerPrincipalType"), F.lit(":"),
                                                      F.col(f"{q}.OwnerPrincipalName")), F.lit("(requester)")),
        F.lit(", renewers ["), _join(F.col(f"{q}.Renewers"), lambda r: F.concat(
            r["PrincipalType"], F.lit(":"), r["PrincipalName"])), F.lit("]"))
    token_hmac = F.lit("a delegation token (its HMAC is the secret: not shown)")
    scram = F.concat_ws("; ", F.when(F.size(F.coalesce(F.col(f"{q}.Upsertions"), F.array())) > 0, F.concat(
        F.lit("set SCRAM credentials of "), _join(F.col(f"{q}.Upsertions"), lambda u: F.concat(
            F.lit("User:"), F.coalesce(u["Name"], F.lit("?")), F.lit(" ("), _enum(SCRAM_MECHANISMS, u["Mechanism"]),
            F.lit(", "), F.coalesce(u["Iterations"].cast("string"), F.lit("?")), F.lit(" iterations)"))))),
        F.when(F.size(F.coalesce(F.col(f"{q}.Deletions"), F.array())) > 0, F.concat(
            F.lit("delete SCRAM credentials of "), _join(F.col(f"{q}.Deletions"), lambda d: F.concat(
                F.lit("User:"), F.coalesce(d["Name"], F.lit("?")), F.lit(" ("), _enum(SCRAM_MECHANISMS, d["Mechanism"]),
                F.lit(")"))))))
    return (
        F.when(key == ApiKey.CREATE_TOPICS, topics_created).when(key == ApiKey.DELETE_TOPICS, topics_deleted)
        .when(key == ApiKey.CREATE_ACLS, acls_created).when(key == ApiKey.DELETE_ACLS, acls_deleted)
        .when(key.isin(ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS), configs)
        .when(key == ApiKey.CREATE_PARTITIONS, partitions).when(key == ApiKey.ALTER_CLIENT_QUOTAS, quotas)
        .when(key == ApiKey.CREATE_DELEGATION_TOKEN, token_create)
        .when(key.isin(ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN), token_hmac)
        .when(key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS, scram)
        .otherwise(F.lit(None).cast("string"))
    )


def admin_audit(events: DataFrame) -> DataFrame:
    """One row per admin write request (``AUDIT_SCHEMA``)."""
    ex = with_endpoints(exchanges(events, list(ADMIN_WRITES), ADMIN_REQUEST_DDL, None))
    codes = F.array_sort(F.array_distinct(F.filter(
        F.concat(F.array(F.col("r_error_code")),
                 F.coalesce(F.col("r_nested_error_codes"), F.array().cast("array<short>"))),
        lambda c: c.isNotNull() & (c != 0))))
    ex = ex.withColumn("error_codes", codes)
    outcome = (
        F.when(F.col("r_ts").isNull(), F.lit("no response"))
        .when(F.col("r_decode_status") != "ok", F.concat(F.lit("response undecodable: "), F.col("r_decode_status")))
        .when(F.size("error_codes") > 0, F.concat(F.lit("failed: "), error_list(F.col("error_codes"))))
        .otherwise(F.lit("ok"))
    )
    return ex.select(
        F.col("ts"), "capture", "conn_id", "correlation_id", "client", "client_id", "principal",
        F.col("envelope_correlation_id").isNotNull().alias("forwarded"), "broker", "api_name", "api_version",
        _targets().alias("targets"), F.coalesce(F.col("qb.ValidateOnly"), F.lit(False)).alias("validate_only"),
        outcome.alias("outcome"), F.col("error_codes").cast("array<short>").alias("error_codes"),
        F.col("r_latency_ms").alias("latency_ms"),
    )


def _who() -> Column:
    return F.concat(
        F.coalesce(F.col("client"), F.lit("?")), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")),
        F.when(F.col("principal").isNotNull(), F.concat(F.lit(", principal "), F.col("principal")))
        .otherwise(F.lit("")), F.lit(")"))


def _subject() -> Column:
    """An admin finding's subject: ``API by PRINCIPAL (client id ID)``."""
    return F.concat(F.col("api_name"), F.lit(" by "), F.coalesce(F.col("principal"), F.lit("no principal")),
                    F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(")"))


def admin_write_failed(audit: DataFrame) -> DataFrame:
    failed = audit.where(F.size("error_codes") > 0)
    agg = failed.groupBy("client", "client_id", "principal", "broker", "api_name", "error_codes").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.array_sort(F.collect_set("targets")).alias("targets"),
        collect_evidence(evidence()).alias("evidence"))
    auth = F.exists("error_codes", lambda c: c.isin(29, 30, 31, 53, 65))
    detail = F.concat(
        F.col("n").cast("string"), F.lit(" "), F.col("api_name"), F.lit(" request(s) from "), _who(),
        F.lit(" to "), F.col("broker"), F.lit(" failed with "), error_list(F.col("error_codes")), F.lit(": "),
        listed("targets", 5, "; "),
        F.when(auth, F.lit(". Someone attempted an admin write they are not authorised for.")).otherwise(
            F.lit(". The change did not (fully) happen.")),
    )
    return as_findings(agg, "admin_write_failed", F.when(auth, F.lit("error")).otherwise(F.lit("warning")), detail,
                       subject=F.concat(_subject(), F.lit(": "), error_list(F.col("error_codes"))))


def admin_write_unanswered(audit: DataFrame) -> DataFrame:
    bad = audit.where(F.col("outcome").startswith("no response") | F.col("outcome").startswith("response undecodable"))
    agg = bad.groupBy("client", "client_id", "principal", "broker", "api_name").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.collect_list("outcome").alias("outcomes"), F.array_sort(F.collect_set("targets")).alias("targets"),
        collect_evidence(evidence()).alias("evidence"))
    # every outcome, with how many requests had it when they differ
    distinct = F.array_sort(F.array_distinct("outcomes"))
    outcomes = F.when(F.size(distinct) == 1, F.element_at(distinct, 1)).otherwise(
        tallied("outcomes", lambda o, n: F.concat(o, F.lit(" for "), n)))
    detail = F.concat(
        F.col("n").cast("string"), F.lit(" "), F.col("api_name"), F.lit(" request(s) from "), _who(),
        F.lit(" to "), F.col("broker"), F.lit(" got no usable answer ("), outcomes, F.lit("): "),
        listed("targets", 5, "; "),
        F.lit(". Whether the change was applied is unknown: check the resource on the cluster."),
    )
    return as_findings(agg, "admin_write_unanswered", "warning", detail, subject=_subject())


def envelope_forwarding_failed(events: DataFrame) -> DataFrame:
    """Envelope (KIP-590) responses with NOT_CONTROLLER or CLUSTER_AUTHORIZATION_FAILED."""
    env = with_endpoints(exchanges(events, [ENVELOPE], ENVELOPE_REQUEST_DDL, None)).where(
        F.col("envelope_correlation_id").isNull()
        & F.col("r_error_code").isin(NOT_CONTROLLER, CLUSTER_AUTHORIZATION_FAILED))
    inner = F.col("qb.RequestDataDecoded")
    principal = F.concat(F.col("qb.RequestPrincipalDecoded.value.Type"), F.lit(":"),
                         F.col("qb.RequestPrincipalDecoded.value.Name"))
    env = env.select(
        "ts", "r_ts", "client", "broker", "capture", "conn_id", "correlation_id", F.col("r_error_code").alias("code"),
        F.coalesce(inner["apiName"], F.lit("unknown request")).alias("inner_api"),
        inner["apiVersion"].alias("inner_version"), inner["clientId"].alias("inner_client_id"),
        F.coalesce(principal, F.lit("unknown principal")).alias("principal"),
        F.coalesce(F.col("qb.ClientHostAddressDecoded"), F.lit("?")).alias("host"))
    agg = env.groupBy("client", "broker", "code", "inner_api", "principal").agg(
        F.min("ts").alias("ts_first"), F.max(F.coalesce("r_ts", "ts")).alias("ts_last"),
        F.count(F.lit(1)).alias("n"), F.array_sort(F.collect_set("host")).alias("hosts"),
        F.array_sort(F.collect_set(F.coalesce("inner_client_id", F.lit("null")))).alias("client_ids"),
        F.array_sort(F.collect_set("inner_version")).alias("inner_versions"),
        collect_evidence(evidence()).alias("evidence"))
    why = F.when(F.col("code") == NOT_CONTROLLER, F.lit(
        ": the forwarding broker's idea of the active controller is stale (controller failover); the inner "
        "request was not applied and the client sees a retriable error.")).otherwise(F.lit(
            ": the forwarding broker's own principal may not forward (it lacks CLUSTER_ACTION on the controller); "
            "the inner request was not applied."))
    detail = F.concat(
        F.lit("Broker "), F.col("client"), F.lit(" forwarded "), F.col("n").cast("string"), F.lit(" "),
        F.col("inner_api"), F.lit(" v"),
        F.when(F.size("inner_versions") > 0, F.array_join(F.transform(
            "inner_versions", lambda v: v.cast("string")), ", v")).otherwise(F.lit("?")),
        F.lit(" request(s) of principal "), F.col("principal"), F.lit(" (client host "),
        F.array_join("hosts", ", "), F.lit(", client id "), F.array_join("client_ids", ", "),
        F.lit(") in an Envelope to "), F.col("broker"), F.lit(", which answered "), error_label(F.col("code")), why,
    )
    return as_findings(agg, "envelope_forwarding_failed", "error", detail,
                       subject=F.concat(F.col("inner_api"), F.lit(" of "), F.col("principal"), F.lit(": "),
                                        error_label(F.col("code"))))
