"""The events' ``topics`` column: ids named as the capture teaches them
(inspector/kafka/topic_names.py), the same column whichever path decoded the body, and ``show --filter topics~...``
on real captures."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from decoders import api
from inspector.cli.main import main
from inspector.kafka.topic_names import MAX_IDS, TopicNames
from inspector.read.reader import iter_capture
from inspector.rows.event_table import EventTable
from inspector.rows.summary import Summary
from tests.decoders.plain_readers import plain_module
from tests.inspector.capture_frames import CAPTURES

PCAPS = Path(__file__).resolve().parents[3] / "pcaps"
ID1, ID2, ID3 = "AAAAAQAAAAAAAAAAAMD_7g", "AAAAAgAAAAAAAAAAAMD_7g", "AAAAAwAAAAAAAAAAAMD_7g"


# ---------------------------------------------------------------------------------------------------------
# Learning ids' names


def test_names_and_unknown_ids() -> None:
    names = TopicNames()
    assert names.text(None, 1) is None
    assert names.text("orders", 1) == "orders"
    assert names.text(["b", "a", "b"], 1) == "b,a"  # distinct, in first-seen order
    assert names.text([(ID1,), "a", (ID1,)], 1) == f"{ID1},a"  # not named yet: the id as Kafka writes it


def test_a_response_naming_both_ways_teaches_the_id() -> None:
    names = TopicNames()
    assert names.text([(ID1,)], 1) == ID1
    assert names.text([("orders", ID1), (None, ID2), ("new", None)], 1) == f"orders,{ID2},new"
    assert names.text([(ID1,), (ID2,)], 2) == f"orders,{ID2}"  # from then on, on any connection
    # The message's own pairs are learned before its ids are read: an id before its pair is named too.
    assert names.text([(ID3,), ("pay", ID3)], 3) == "pay"
    assert names.name(None, ID3) == "pay" and names.name(None, ID2) is None


def test_names_are_learned_per_cluster() -> None:
    names = TopicNames()
    names.saw_cluster(1, "A")
    names.saw_cluster(2, "B")
    assert names.cluster(1) == "A" and names.cluster(3) is None
    names.text([("orders", ID1)], 1)  # learned in cluster A
    assert names.text([(ID1,)], 1) == "orders"
    assert names.text([(ID1,)], 2) == ID1  # cluster B has not named it
    assert names.text([(ID1,)], 3) == "orders"  # a connection of no known cluster: what the capture knows
    names.text([("pay", ID2)], 4)  # learned where no cluster is known
    assert names.text([(ID2,)], 2) == "pay"  # may be any cluster's: given to B too
    names.text([("x", ID3)], 1)
    names.text([("y", ID3)], 2)  # the same id in two clusters
    assert (names.text([(ID3,)], 1), names.text([(ID3,)], 2)) == ("x", "y")
    names.saw_cluster(1, "B")  # a connection's cluster is the last one it promoted
    assert names.text([(ID1,)], 1) == ID1


def test_at_most_cap_ids_the_oldest_forgotten() -> None:
    names = TopicNames(cap=2)
    names.learn(None, ID1, "a")
    names.learn(None, ID2, "b")
    names.learn(None, ID1, "a")  # known: it keeps its place
    names.learn(None, ID3, "c")  # beyond the cap: ID1, learned first, is forgotten
    assert [names.name(None, i) for i in (ID1, ID2, ID3)] == [None, "b", "c"]
    assert names.forgotten == 1
    assert names.text([(ID1,)], 1) == ID1  # as before it was learned ...
    assert names.text([("a", ID1)], 1) == "a"  # ... until a response names it again
    assert [names.name(None, i) for i in (ID1, ID2, ID3)] == ["a", None, "c"]
    assert names.forgotten == 2
    for conn in range(5):
        names.saw_cluster(conn, "A")
    assert [names.cluster(c) for c in range(5)] == [None, None, None, "A", "A"]
    assert TopicNames().cap == MAX_IDS == 100_000
    with pytest.raises(ValueError):
        TopicNames(cap=0)


# ---------------------------------------------------------------------------------------------------------
# Every path to the same column


def _topics(path: Path, body_text: bool) -> list[str | None]:
    table = EventTable(capture=path.name)
    for ev in iter_capture(str(path), Summary(), body_text=body_text):
        table.add(ev)
    return table.take().column("topics").to_pylist()


def _forget_readers() -> None:
    api._request_readers.clear()
    api._response_readers.clear()


def test_every_path_gives_the_same_topics_on_every_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON writers' references (Produce, Fetch: ``read``'s path), the compiled readers' dicts and the plain
    readers' dicts: the same column on every capture in pcaps/ and the shared real captures."""
    written = {path.name: _topics(path, True) for path in CAPTURES}
    decoded = {path.name: _topics(path, False) for path in CAPTURES}
    monkeypatch.setattr(api, "reader_module", plain_module)  # the plain readers of every layout (the reference)
    _forget_readers()
    try:
        entry = api._readers(1, 12, "request")
        assert entry is not None and entry.body is plain_module("api_001_fetch").REQUEST[12] and entry.text is None
        plain = {path.name: _topics(path, False) for path in CAPTURES}
    finally:
        monkeypatch.undo()
        _forget_readers()
    assert written == decoded == plain
    assert sum(t is not None for rows in written.values() for t in rows) > 700  # measured: 785 rows


# ---------------------------------------------------------------------------------------------------------
# read, then show --filter topics~REGEX, on real captures whose clients name topics by id

#: (capture in pcaps/, its topic): Fetch v16 by id after Metadata v12 responses (Tansu); KIP-848 heartbeats by id
#: after Metadata v13 responses (the mock cluster; checked once the capture is in pcaps/).
BY_ID = [("tansu-consumer-group-3-members.pcap", "orders"),
         ("mock-cluster-kip848-consumer-group.pcap", "kip848-orders")]


@pytest.mark.parametrize(("name", "topic"), BY_ID)
def test_read_names_ids_and_show_filters_on_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                   topic: str) -> None:
    capture = PCAPS / name
    if not capture.exists():
        pytest.skip(f"{name} is not in pcaps/")
    out = tmp_path / "out"
    assert main(["read", str(capture), "--output", str(out), "--quiet"]) == ExitCode.OK
    rows = pq.read_table(out / "events").to_pylist()
    by_id = [r for r in rows if '"TopicId":"' in (r["body"] or "") and f'"{topic}"' not in r["body"]
             and r["api_name"] != "Metadata"]
    assert len(by_id) > 10  # messages naming the topic by its id alone ...
    assert {r["topics"] for r in by_id} == {topic}  # ... named in the column
    assert {r["api_name"] for r in by_id} >= ({"Fetch"} if "tansu" in name else {"Fetch", "ConsumerGroupHeartbeat"})
    assert all(t is None or "," not in t for t in (r["topics"] for r in rows))  # one topic in these captures
    matching = sum(1 for r in rows if r["topics"] == topic)
    assert main(["show", str(capture), "--filter", f"topics~^{topic[:3]}"]) == ExitCode.OK
    assert f"{matching:,} of {len(rows):,} messages shown" in capsys.readouterr().out
    assert main(["show", str(capture), "--filter", "topics~no-such-topic"]) == ExitCode.OK
    assert f"0 of {len(rows):,} messages shown" in capsys.readouterr().out
