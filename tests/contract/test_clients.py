"""What a client row says (contract/clients.py), from usage and error rows as both groupings yield them."""

from __future__ import annotations

from datetime import UTC, datetime

from contract.clients import UNGONE, build_clients, move_to, old_record_format, readiness

T0, T1 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC), datetime(2024, 5, 1, 12, 5, tzinfo=UTC)


def test_move_to_comes_from_the_specs() -> None:
    assert (move_to(0, 2), move_to(0, 3), move_to(1, 3), move_to(3, 0)) == (3, UNGONE, 4, UNGONE)
    assert move_to(7, 0) is None and move_to(4, 5) is None  # ZooKeeper-era APIs: gone
    assert move_to(None, 0) == UNGONE and move_to(0, None) == UNGONE


def test_old_record_format_only_in_produce_requests_and_fetch_responses() -> None:
    body = '{"Records":{"batches":[{"magic":1}]}}'
    assert old_record_format(0, "request", body) and old_record_format(1, "response", body)
    assert not old_record_format(0, "response", body) and not old_record_format(3, "request", body)
    assert not old_record_format(0, "request", '{"batches":[{"magic":2}]}')
    assert not old_record_format(0, "request", None)


def test_rows_merge_brokers_versions_software_and_errors() -> None:
    usage = [
        ("10.0.0.1", "app", "User:bob", "b1:9092", "request", 0, "Produce", 2, 4, T1, T1, None, None, 4),
        ("10.0.0.1", "app", "User:bob", "b2:9092", "request", 0, "Produce", 2, 1, T0, T0, None, None, 0),
        ("10.0.0.1", "app", "User:bob", "b1:9092", "request", 18, "ApiVersions", 3, 1, T0, T0, "kafka-python", "", 0),
        ("10.0.0.1", "app", "User:bob", "b1:9092", "response", 0, "Produce", 2, 5, T0, T1, None, None, 0),
        ("10.0.0.2", None, None, "b1:9092", "request", 7, "ControlledShutdown", 0, 1, T0, T0, None, None, 0),
    ]
    app, broker = build_clients(usage, [("10.0.0.1", "app", "User:bob", 6, 2)])
    row = app.row()
    assert (row["first_seen"], row["last_seen"], row["brokers"], row["requests"]) == (T0, T1, ["b1:9092", "b2:9092"], 6)
    assert (row["software_name"], row["software_version"], app.software) == ("kafka-python", None, "kafka-python")
    assert row["errors"] == [{"error_code": 6, "error_name": "NOT_LEADER_OR_FOLLOWER", "responses": 2}]
    assert readiness(row) == ["Produce v2 ×5 (needs v3+)", "MessageSet v0/v1 produced ×4"]
    assert readiness(broker.row()) == ["ControlledShutdown v0 ×1 (the API is gone)"]
    assert broker.software == "software unknown"
