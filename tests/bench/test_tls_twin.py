"""The TLS twin of a plaintext capture (bench/tls_twin.py, what bench/bench_tls.py measures): read with its key
log, it gives the plaintext capture's events, every column but the capture's name and the ``tls`` mark the
same (times, offsets, bodies), in TLS 1.3 and TLS 1.2 (AEAD and CBC), retransmissions included; a capture it
cannot rewrite faithfully (a gap) is refused."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.bench_tls import differences
from bench.tls_twin import TwinError, make_twin
from tests.inspector.test_accounting import duplicate
from tests.inspector.test_accounting import write as write_packets
from tests.inspector.tls_captures import kafka_frames, read, write_capture

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "pcaps" / "tansu-produce-fetch-compression.pcap"


@pytest.mark.parametrize("tls12", [None, "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-SHA384"],
                         ids=["tls13", "tls12-gcm", "tls12-cbc"])
def test_the_twin_decrypts_to_the_plaintext_events(tmp_path: Path, tls12: str | None) -> None:
    twin, keylog = tmp_path / "twin.pcap", tmp_path / "twin.keylog"
    stats = make_twin(CAPTURE, twin, keylog, tls12=tls12)
    assert stats.tls_connections == stats.connections > 0 and stats.tls_bytes > stats.plaintext_bytes
    plain = read(tmp_path, CAPTURE, name="plain")
    tls = read(tmp_path, twin, "--tls-keylog", str(keylog), name="tls")
    assert differences(tmp_path / "plain", tmp_path / "tls") == []
    assert len(tls.events) == len(plain.events) > 100 and all(e["tls"] for e in tls.events)
    assert tls.summary["frames"] == plain.summary["frames"]
    assert tls.summary["accounting"]["*"]["bytes_decoded"] == plain.summary["accounting"]["*"]["bytes_decoded"]
    without = read(tmp_path, twin, name="nokeys")  # and without the key log: nothing decrypted
    assert without.events == [] and without.summary["accounting"]["*"]["bytes_encrypted"] > 0


def test_retransmissions_carry_the_same_records_and_a_gap_is_refused(tmp_path: Path) -> None:
    packets = write_capture(tmp_path / "clean.pcap", list(kafka_frames()))
    again = write_packets(tmp_path / "again.pcap", duplicate(packets, random.Random(7)))
    make_twin(again, tmp_path / "twin.pcap", tmp_path / "twin.keylog")
    plain = read(tmp_path, again, name="plain")
    tls = read(tmp_path, tmp_path / "twin.pcap", "--tls-keylog", str(tmp_path / "twin.keylog"), name="tls")
    assert plain.summary["accounting"]["*"]["bytes_retransmitted"] > 0
    assert differences(tmp_path / "plain", tmp_path / "tls") == [] and len(tls.events) == 8
    gap = write_packets(tmp_path / "gap.pcap", packets[:5] + packets[6:])  # a data segment lost
    with pytest.raises(TwinError, match="expected"):
        make_twin(gap, tmp_path / "gap-twin.pcap", tmp_path / "gap.keylog")
