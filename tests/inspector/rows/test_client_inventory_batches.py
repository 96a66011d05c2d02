"""``kafka-inspector clients`` counts the events batch by batch (``Inventory.add``): the same rows as the whole
table at once, from a capture or from a ``read`` dataset (its files read batch by batch), older datasets
without some columns included."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.read.reader import iter_capture
from inspector.rows.client_inventory import COLUMNS, Inventory, inventory
from inspector.rows.event_table import EventTable
from inspector.rows.summary import Summary
from tests.conftest import PCAPS

CAPTURES = [PCAPS / "mock-cluster-3-brokers-multi-client.pcap", PCAPS / "tansu-kafka-python-0.10-removed-versions.pcap",
            PCAPS / "tansu-sasl-scram.pcap"]


def _events(path: Path) -> pa.Table:
    table = EventTable(capture=path.name)
    for ev in iter_capture(str(path), Summary()):
        table.add(ev)
    return pa.Table.from_batches([table.take()]).select(list(COLUMNS))


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_batches_give_the_rows_of_the_whole(size: int) -> None:
    table = pa.concat_tables([_events(p) for p in CAPTURES])
    whole = [c.row() for c in inventory(table)]
    found = Inventory()
    for batch in table.to_batches(max_chunksize=size):
        found.add(batch)
    assert [c.row() for c in found.clients()] == whole and len(whole) > 3


def test_clients_of_captures_and_of_their_dataset_print_the_same(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clients", *map(str, CAPTURES)]) == ExitCode.OK
    from_captures = capsys.readouterr().out
    out = tmp_path / "d"
    assert main(["read", *map(str, CAPTURES), "-o", str(out), "--quiet", "--jobs", "2"]) == ExitCode.OK
    assert main(["clients", str(out)]) == ExitCode.OK
    assert capsys.readouterr().out == from_captures and "client(s)" in from_captures
    # A dataset written before a column existed (here: principal) is read with that column null.
    old = tmp_path / "old" / "events"
    old.mkdir(parents=True)
    for i, path in enumerate(sorted((out / "events").glob("*.parquet"))):
        pq.write_table(pq.read_table(path).drop_columns(["principal"]), old / f"part-{i:05d}.parquet")
    assert main(["clients", str(old.parent)]) == ExitCode.OK
    assert "client(s)" in capsys.readouterr().out
