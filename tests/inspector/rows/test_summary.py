"""Summary.merge: the totals of several processes (``read --jobs N``) add up, field by field, and a field
the merge does not know how to combine is an error rather than silently dropped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from inspector.rows.summary import LIMITS, ApiStats, Summary, _merge_fields


def _filled(seed: int) -> Summary:
    """A Summary with every field set to something other than its default."""
    s = Summary()
    s.apis = {"Produce": ApiStats(1 + seed, 2, 3, 4, 5, [1.0 + seed]), f"only{seed}": ApiStats(7, latencies=[2.0])}
    s.frames, s.messages, s.decode_failures, s.decode_warnings = 10 + seed, 11, 12, 13
    s.stream_issues = {"gap": 100, f"kind{seed}": 1}
    s.connections = [{"conn_id": seed}]
    s.empty_connections, s.non_kafka_connections, s.non_kafka_bytes, s.packets = 20, 21, 22, 23
    s.packets_skipped = {"not tcp": 5, f"reason{seed}": 1}
    s.warnings = [f"warning {seed}"]
    s.max_conn_id = 1000 * (seed + 1)
    s.limits = {"--max-held": 3, f"--limit{seed}": 1}
    s.segments_ignored("both.pcap", {"data again": [2, 100], f"reason{seed}": [1, 0]})
    s.segments_ignored(f"only{seed}.pcap", {"after close": [3, 0]})
    return s


def test_every_field_is_merged() -> None:
    a, b = _filled(0), _filled(1)
    a.merge(b)
    assert a.apis["Produce"] == ApiStats(1 + 2, 4, 6, 8, 10, [1.0, 2.0])
    assert a.apis["only0"] == ApiStats(7, latencies=[2.0]) and a.apis["only1"] == ApiStats(7, latencies=[2.0])
    assert (a.frames, a.messages, a.decode_failures, a.decode_warnings) == (21, 22, 24, 26)
    assert a.stream_issues == {"gap": 200, "kind0": 1, "kind1": 1}
    assert a.connections == [{"conn_id": 0}, {"conn_id": 1}]
    assert (a.empty_connections, a.non_kafka_connections, a.non_kafka_bytes, a.packets) == (40, 42, 44, 46)
    assert a.packets_skipped == {"not tcp": 10, "reason0": 1, "reason1": 1}
    assert a.warnings == ["warning 0", "warning 1"]
    assert a.max_conn_id == 2000  # the largest, not the sum
    assert a.limits == {"--max-held": 6, "--limit0": 1, "--limit1": 1}
    assert a.ignored_segments == {"both.pcap": {"data again": 4, "reason0": 1, "reason1": 1},
                                  "only0.pcap": {"after close": 3}, "only1.pcap": {"after close": 3}}
    assert a.ignored_bytes == {"both.pcap": {"data again": 200, "reason0": 0, "reason1": 0},
                               "only0.pcap": {"after close": 0}, "only1.pcap": {"after close": 0}}
    assert a.ignored() == {"data again": {"segments": 4, "bytes": 200}, "after close": {"segments": 6, "bytes": 0},
                           "reason0": {"segments": 1, "bytes": 0}, "reason1": {"segments": 1, "bytes": 0}}
    # Every field of Summary changed (a new field the test does not fill fails here, not silently).
    assert all(getattr(a, f.name) != getattr(_filled(0), f.name) for f in dataclasses.fields(Summary)), [
        f.name for f in dataclasses.fields(Summary) if getattr(a, f.name) == getattr(_filled(0), f.name)]


def test_merge_copies_what_it_takes() -> None:
    """Entries only the other summary has are copied, not shared: changing one summary later does not
    change the other."""
    a, b = Summary(), _filled(1)
    a.merge(b)
    assert a.apis["Produce"] == b.apis["Produce"] and a.apis["Produce"] is not b.apis["Produce"]
    a.apis["Produce"].latencies.append(99.0)
    a.limit_hit("--max-held")
    assert b.apis["Produce"].latencies == [2.0] and b.limits["--max-held"] == 3


def test_merging_into_an_empty_summary_gives_the_same_totals() -> None:
    a = Summary()
    a.merge(_filled(3))
    assert a == _filled(3)


def test_a_field_of_an_unknown_kind_is_an_error() -> None:
    @dataclass
    class WithSet:
        count: int = 0
        names: set[str] = field(default_factory=set)

    with pytest.raises(TypeError, match="WithSet.names"):
        _merge_fields(WithSet(1, {"a"}), WithSet(2, {"b"}))


def test_max_held_is_a_documented_limit() -> None:
    assert "--max-held" in LIMITS and "held more than the limit" in LIMITS["--max-held"]
