"""The decode job's task function with ``--tls-keylog``: it passes the key log to the same reader ``read`` runs, so
its rows of a Kafka-over-TLS capture are ``read --tls-keylog``'s (conn_id aside). No Spark session needed: the
``mapInArrow`` function is called as Spark calls it, with a batch of (index, path) rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pcaps.capture_kit.tls_memory import make_pki
from pipelines.decode_job import CONN_ID_STRIDE, decode_files
from tests.inspector.tls_captures import comparable, read, tls_conversation, write_capture


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("tls")
    keylog = tmp / "keylog.txt"
    conversation = tls_conversation(make_pki(tmp / "pki"), keylog)
    pcap = tmp / "tls.pcap"
    write_capture(pcap, conversation.chunks)
    return pcap, keylog


def _rows(pcap: Path, keylog: Path | None) -> list[dict[str, object]]:
    batch = pa.RecordBatch.from_pydict({"index": [3], "path": [str(pcap)]})
    return [row for out in decode_files(iter([batch]), (), str(keylog) if keylog else None) for row in out.to_pylist()]


def test_the_task_decrypts_what_read_decrypts(capture: tuple[Path, Path], tmp_path: Path) -> None:
    pcap, keylog = capture
    rows = _rows(pcap, keylog)
    expected = read(tmp_path, pcap, "--tls-keylog", str(keylog)).events
    assert rows and all(r["tls"] is True and r["conn_id"] > 3 * CONN_ID_STRIDE for r in rows)
    strip = [{k: v for k, v in r.items() if k != "conn_id"} for r in comparable(rows)]
    assert strip == [{k: v for k, v in r.items() if k != "conn_id"} for r in comparable(expected)]
    assert _rows(pcap, None) == []  # without keys: encrypted, no rows
