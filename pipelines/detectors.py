"""Every detector of the report, by name: the one list the report job runs (``pipelines/README.md`` documents
each kind).

A detector is a pure function of the shared inputs (the events, the broker identity observations, the admin
audit) to a DataFrame of finding rows (``as_findings``; the report merges them into episodes). The list is
ordered longest first, so that running them side by side finishes soonest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pyspark.sql import DataFrame

from contract.kafka import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_CLUSTER,
    DESCRIBE_GROUPS,
    END_TXN,
    ENVELOPE,
    FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    METADATA,
    OFFSET_COMMIT,
    PRODUCE,
    SYNC_GROUP,
    TXN_OFFSET_COMMIT,
)
from pipelines import (
    admin,
    group_inventory,
    groups,
    heartbeat_coverage,
    heartbeat_groups,
    hotspots,
    identity,
    lag,
    producers,
    rebalances,
)
from pipelines import (
    client_usage as clients,
)
from pipelines import (
    version_discipline as versions,
)
from pipelines.kafka_rules import ADMIN_WRITES


class Inputs:
    """What the detectors share: the events and the broker identity observations
    (``identity.identity_observations(events, hosts)``), and, made on first use by the step that first asks (the
    steps asking meanwhile wait for it), once each: the admin audit (``admin.admin_audit(events)``), the lag
    (``lag.lag_of(events, observations)``) and the group inventory (``group_inventory.inventory``, a small list).
    ``keep`` is applied to what is made (the report materialises it)."""

    def __init__(self, events: DataFrame, observations: DataFrame,
                 keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> None:
        self.events = events
        self.observations = observations
        self._keep = keep
        self._locks = {"audit": threading.Lock(), "lag": threading.Lock(), "groups": threading.Lock()}
        self._made: dict[str, Any] = {}

    def _once(self, name: str, make: Callable[[], Any]) -> Any:
        with self._locks[name]:
            if name not in self._made:
                self._made[name] = make()
            return self._made[name]

    @property
    def audit(self) -> DataFrame:
        return cast(DataFrame, self._once("audit", lambda: self._keep(admin.admin_audit(self.events))))

    @property
    def lag(self) -> lag.Lag:
        return cast(lag.Lag, self._once("lag", lambda: lag.lag_of(self.events, self.observations, self._keep)))

    @property
    def groups(self) -> list[group_inventory.Group]:
        return cast(list[group_inventory.Group], self._once("groups", lambda: group_inventory.inventory(
            self.events, self.lag)))


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    find: Callable[[Inputs], DataFrame]
    #: the API keys whose messages it judges: with none of them in the events it finds nothing, and a pass does
    #: not run it (a ``--follow`` micro-batch holds a few APIs); None: any traffic
    reads: frozenset[int] | None = None


_GROUPS = frozenset({JOIN_GROUP, SYNC_GROUP})
_HEARTBEATS = frozenset(heartbeat_groups.PROTOCOLS)


DETECTORS: tuple[Detector, ...] = (
    Detector("misrouted_api_versions", lambda i: identity.misrouted_api_versions(i.events, i.observations),
             frozenset({API_VERSIONS})),
    Detector("unassigned_partitions", lambda i: groups.unassigned_partitions(i.events, i.observations), _GROUPS),
    Detector("unassigned_heartbeat_partitions",
             lambda i: heartbeat_coverage.unassigned_partitions(i.events, i.observations),
             frozenset({CONSUMER_GROUP_HEARTBEAT})),
    Detector("unadvertised_version", lambda i: versions.unadvertised_version(i.events), frozenset({API_VERSIONS})),
    Detector("classic_group_can_move", lambda i: group_inventory.classic_group_can_move(i.events, i.groups),
             _GROUPS),
    Detector("endpoint_identity_changed", lambda i: identity.endpoint_identity_changed(i.observations),
             frozenset({METADATA, DESCRIBE_CLUSTER, FIND_COORDINATOR})),
    Detector("inconsistent_group_protocol", lambda i: groups.inconsistent_group_protocol(i.events), _GROUPS),
    Detector("group_protocol_mismatch", lambda i: groups.group_protocol_mismatch(i.events),
             _GROUPS | {DESCRIBE_GROUPS}),
    Detector("undecodable_group_metadata", lambda i: groups.undecodable_group_metadata(i.events),
             _GROUPS | {DESCRIBE_GROUPS}),
    Detector("producer_sequence_gap", lambda i: producers.producer_sequence_gap(i.events), frozenset({PRODUCE})),
    Detector("transaction_anomaly", lambda i: producers.transaction_anomaly(i.events),
             frozenset({PRODUCE, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN})),
    Detector("rebalance_storm", lambda i: rebalances.rebalance_storm(i.events), _GROUPS | _HEARTBEATS),
    Detector("error_hotspot", lambda i: hotspots.error_hotspot(i.events)),
    Detector("latency_hotspot", lambda i: hotspots.latency_hotspot(i.events)),
    Detector("removed_in_kafka_4", lambda i: clients.removed_in_kafka_4(i.events)),
    Detector("old_message_format", lambda i: clients.old_message_format(i.events), frozenset({PRODUCE, FETCH})),
    Detector("endpoint_type_mismatch", lambda i: versions.endpoint_type_mismatch(i.events),
             frozenset({DESCRIBE_CLUSTER})),
    Detector("controller_direct_access", lambda i: versions.controller_direct_access(i.events),
             frozenset({DESCRIBE_CLUSTER})),
    Detector("group_protocol_not_offered", lambda i: groups.group_protocol_not_offered(i.events), _GROUPS),
    Detector("overlapping_assignment", lambda i: groups.overlapping_assignment(i.events), _GROUPS),
    Detector("overlapping_heartbeat_assignment", lambda i: heartbeat_groups.overlapping_assignment(i.events),
             _HEARTBEATS),
    Detector("group_member_errors", lambda i: heartbeat_groups.group_member_errors(i.events), _HEARTBEATS),
    Detector("consumer_lag_growing", lambda i: lag.consumer_lag_growing(i.lag),
             frozenset({OFFSET_COMMIT, TXN_OFFSET_COMMIT})),
    Detector("api_versions_one_sided_identity", lambda i: identity.api_versions_one_sided_identity(i.events),
             frozenset({API_VERSIONS})),
    Detector("rebootstrap_required", lambda i: identity.rebootstrap_required(i.events)),
    Detector("envelope_forwarding_failed", lambda i: admin.envelope_forwarding_failed(i.events),
             frozenset({ENVELOPE})),
    Detector("admin_write_failed", lambda i: admin.admin_write_failed(i.audit), frozenset(ADMIN_WRITES)),
    Detector("admin_write_unanswered", lambda i: admin.admin_write_unanswered(i.audit), frozenset(ADMIN_WRITES)),
)
