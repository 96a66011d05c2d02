"""Kafka facts the detectors need: error codes (names in ``decoders.errors``), API keys, thresholds' vocabulary.

Only numbers Kafka itself defines (``Errors.java``, the message specs); nothing here reads events.
"""

from __future__ import annotations

from decoders.errors import ERROR_NAMES

INCONSISTENT_GROUP_PROTOCOL = 23
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
MEMBER_ID_REQUIRED = 79
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115
REBOOTSTRAP_REQUIRED = 129

assert ERROR_NAMES[INCONSISTENT_GROUP_PROTOCOL] == "INCONSISTENT_GROUP_PROTOCOL"
assert ERROR_NAMES[MISMATCHED_ENDPOINT_TYPE] == "MISMATCHED_ENDPOINT_TYPE"
assert ERROR_NAMES[REBOOTSTRAP_REQUIRED] == "REBOOTSTRAP_REQUIRED"


def error_label(code: int) -> str:
    """``NAME (code)``, e.g. ``INCONSISTENT_GROUP_PROTOCOL (23)``."""
    return f"{ERROR_NAMES.get(code, 'error')} ({code})"


# API keys
METADATA = 3
FIND_COORDINATOR = 10
JOIN_GROUP = 11
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
API_VERSIONS = 18
ENVELOPE = 58
DESCRIBE_CLUSTER = 60

#: KIP-4 administrative writes (and the delegation-token writes): API key -> name.
ADMIN_WRITES: dict[int, str] = {
    19: "CreateTopics",
    20: "DeleteTopics",
    30: "CreateAcls",
    31: "DeleteAcls",
    33: "AlterConfigs",
    37: "CreatePartitions",
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    44: "IncrementalAlterConfigs",
    49: "AlterClientQuotas",
}

#: APIs whose response time is set by the client or the group on purpose (long polls, rebalances):
#: latency hot spots for these are only judged against the same API on other brokers.
LONG_POLL_APIS = frozenset({"Fetch", "JoinGroup", "SyncGroup", "ShareFetch", "Vote", "FetchSnapshot"})

#: Error codes that are part of a normal protocol exchange, not a sign of trouble.
ROUTINE_ERRORS = frozenset({MEMBER_ID_REQUIRED})

#: KIP-919 DescribeCluster EndpointType values.
ENDPOINT_TYPES = {1: "broker", 2: "controller"}

SEVERITIES = ("info", "warning", "error", "critical")

#: ACL enums (CreateAcls/DeleteAcls), for the admin audit's target descriptions.
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                      6: "DELEGATION_TOKEN", 7: "USER"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
                  12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
#: ConfigResource types (AlterConfigs, IncrementalAlterConfigs).
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}
CONFIG_OPERATIONS = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}
