"""Real Kafka-over-TLS captures, when present (pcaps/tls/*.pcap, real clients against a real broker behind TLS,
each with the key log its client wrote beside it): with the key log every connection is decrypted and its
frames decode, with no byte undecodable; without it nothing is undecodable either, the bytes are encrypted.
Skipped when the captures are not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inspector.tls_captures import check_accounting, read

TLS_CAPTURES = sorted((Path(__file__).resolve().parents[2] / "pcaps" / "tls").glob("*.pcap"))
WITH_KEYS = [p for p in TLS_CAPTURES if p.with_suffix(".keylog").exists()]


@pytest.mark.skipif(not WITH_KEYS, reason="no TLS captures with key logs under pcaps/tls/")
@pytest.mark.parametrize("pcap", WITH_KEYS, ids=[p.stem for p in WITH_KEYS])
def test_with_its_key_log_every_connection_decrypts_and_decodes(pcap: Path, tmp_path: Path) -> None:
    got = read(tmp_path, pcap, "--tls-keylog", str(pcap.with_suffix(".keylog")))
    assert got.connections and got.events and got.summary["non_kafka_connections"] == 0
    for row in got.connections:
        assert row["tls"] is True and row["tls_decryption"] == "decrypted", row
        assert row["bytes_encrypted"] == row["bytes_undecodable"] == row["decode_failures"] == 0, row
    assert all(e["tls"] and e["decode_status"] == "ok" for e in got.events)
    if "mtls" in pcap.name:  # the client certificate's principal, as Kafka's SSL principal builder gives it
        assert {e["principal"] for e in got.events} == {"User:CN=alice,OU=payments,O=acme"}
    check_accounting(got)


@pytest.mark.skipif(not TLS_CAPTURES, reason="no TLS captures under pcaps/tls/")
@pytest.mark.parametrize("pcap", TLS_CAPTURES, ids=[p.stem for p in TLS_CAPTURES])
def test_without_keys_the_bytes_are_encrypted_not_undecodable(pcap: Path, tmp_path: Path) -> None:
    got = read(tmp_path, pcap)
    assert got.events == [] and got.connections and got.summary["non_kafka_connections"] == 0
    for row in got.connections:
        assert row["tls"] is True and row["tls_version"] in ("TLSv1.2", "TLSv1.3"), row
        assert row["bytes_undecodable"] == row["bytes_decoded"] == 0, row
        assert row["bytes_encrypted"] + row["bytes_tls_overhead"] == row["bytes_seen"], row
    check_accounting(got)
