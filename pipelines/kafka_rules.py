"""How the detectors judge Kafka traffic: which writes are administrative, which APIs wait on purpose, which
errors are routine, and how severe a finding is.

Kafka's own numbers and names (error codes, API keys, enums) are the contract's: ``contract.kafka``.
"""

from __future__ import annotations

from contract.kafka import API_NAMES, MEMBER_ID_REQUIRED, ApiKey

#: KIP-4 administrative writes (and the delegation-token writes): API key -> name.
ADMIN_WRITES: dict[int, str] = {key.value: API_NAMES[key] for key in (
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS, ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS)}

#: APIs whose response time is set by the client or the group on purpose (long polls, rebalances):
#: latency hot spots for these are only judged against the same API on other brokers.
LONG_POLL_APIS = frozenset({"Fetch", "JoinGroup", "SyncGroup", "ShareFetch", "Vote", "FetchSnapshot"})

#: Error codes that are part of a normal protocol exchange, not a sign of trouble.
ROUTINE_ERRORS = frozenset({MEMBER_ID_REQUIRED})

SEVERITIES = ("info", "warning", "error", "critical")
#: A severity's rank: the most severe is the highest.
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES, 1)}
