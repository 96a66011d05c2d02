"""Kafka over TLS, end to end through ``read``: found by content, described, decrypted with ``--tls-keylog`` into
the events of the same frames in plaintext (marked ``tls``), and, without keys, with wrong keys, from the middle
of a connection or across a TCP gap, counted as encrypted, never as undecodable. The byte accounting adds up
in every case. Captures: tests/inspector/tls_captures.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scapy.utils import rdpcap

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.kafka.tls_stream import STOPPED_GAP
from inspector.tls.tls_events import MID_CONNECTION, NO_KEYS
from pcaps.capture_kit.tls_memory import NOT_AFTER, NOT_BEFORE, SERVER_NAME, Capture, Pki, make_pki
from tests.inspector.test_accounting import duplicate, reorder
from tests.inspector.test_accounting import write as write_packets
from tests.inspector.tls_captures import (
    Read,
    check_accounting,
    comparable,
    corrupt_keys,
    kafka_frames,
    merge,
    read,
    segment_index,
    tls_conversation,
    write_capture,
)
from tests.pcapgen import CLIENT

#: The TLS versions and suites each scenario runs with: TLS 1.3 (OpenSSL's default, AES-256-GCM), TLS 1.2 with
#: an AEAD suite, TLS 1.2 with CBC and HMAC.
VERSIONS = {
    "tls13": {},
    "tls12-gcm": {"tls12": "ECDHE-RSA-AES128-GCM-SHA256"},
    "tls12-cbc": {"tls12": "ECDHE-RSA-AES256-SHA384"},
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def plaintext(tmp_path_factory: pytest.TempPathFactory) -> Read:
    """The same Kafka frames in plaintext: what decryption must give."""
    tmp = tmp_path_factory.mktemp("plain")
    pcap = tmp / "plain.pcap"
    write_capture(pcap, list(kafka_frames()))
    return read(tmp, pcap)


@pytest.fixture(scope="module", params=list(VERSIONS))
def tls(request: pytest.FixtureRequest, pki: Pki, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[str, Capture, Path, Path]:
    """(version, conversation, its capture, its key log file)."""
    tmp = tmp_path_factory.mktemp(request.param)
    keylog = tmp / "keylog.txt"
    capture = tls_conversation(pki, keylog, **VERSIONS[request.param])
    pcap = tmp / "tls.pcap"
    write_capture(pcap, capture.chunks)
    return request.param, capture, pcap, keylog


def test_plaintext_twin_decodes_every_frame(plaintext: Read) -> None:
    assert len(plaintext.events) == len(kafka_frames())
    assert all(e["decode_status"] == "ok" and e["tls"] is False for e in plaintext.events)
    (row,) = plaintext.connections
    assert row["tls"] is False and row["tls_version"] is None and row["bytes_encrypted"] == 0
    check_accounting(plaintext)


def test_decrypted_events_equal_the_plaintext_ones(tls: tuple[str, Capture, Path, Path], plaintext: Read,
                                                   tmp_path: Path) -> None:
    version, capture, pcap, keylog = tls
    got = read(tmp_path, pcap, "--tls-keylog", str(keylog))
    assert comparable(got.events) == comparable(plaintext.events)
    assert [e["tls"] for e in got.events] == [True] * len(kafka_frames())
    assert [(e["api_name"], e["api_version"], e["correlation_id"]) for e in got.events][:4] == [
        ("ApiVersions", 0, 1), ("ApiVersions", 0, 1), ("Metadata", 0, 2), ("Metadata", 0, 2)]
    (row,) = got.connections
    assert row["tls"] is True and row["tls_decryption"] == "decrypted"
    assert row["tls_version"] == ("TLSv1.3" if version == "tls13" else "TLSv1.2")
    assert row["tls_sni"] == SERVER_NAME and row["tls_resumed"] is False and row["tls_client_cert"] is False
    assert row["tls_cipher_suite"] == {"tls13": "TLS_AES_256_GCM_SHA384",
                                       "tls12-gcm": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                       "tls12-cbc": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"}[version]
    assert row["tls_server_cert_subject"] == f"CN={SERVER_NAME},O=acme,C=US"
    assert row["tls_server_cert_issuer"] == "CN=Test CA,O=acme,C=US"
    assert (row["tls_server_cert_not_before"], row["tls_server_cert_not_after"]) == (NOT_BEFORE, NOT_AFTER)
    assert row["principal"] is None  # no client certificate, no SASL
    # The plaintext is the Kafka frames, byte for byte; the rest of the TLS stream is its overhead.
    plain = plaintext.connections[0]
    for key in ("decoded", "undecodable", "gap"):
        assert row[f"bytes_{key}"] == plain[f"bytes_{key}"], key
    assert row["bytes_encrypted"] == 0 and row["bytes_tls_overhead"] > 0
    assert row["bytes_seen"] == len(b"".join(data for _, data in capture.chunks))
    assert got.summary["non_kafka_connections"] == 0 and got.summary["frames"] == len(kafka_frames())
    check_accounting(got)


def test_mutual_tls_gives_the_certificates_principal(pki: Pki, plaintext: Read, tmp_path: Path) -> None:
    keylog = tmp_path / "keylog.txt"
    capture = tls_conversation(pki, keylog, client_cert=True)
    write_capture(tmp_path / "mtls.pcap", capture.chunks)
    got = read(tmp_path, tmp_path / "mtls.pcap", "--tls-keylog", str(keylog))
    assert comparable(got.events) == [dict(e, principal="User:CN=alice,OU=payments,O=acme,C=US")
                                      for e in comparable(plaintext.events)]
    (row,) = got.connections
    assert row["principal"] == "User:CN=alice,OU=payments,O=acme,C=US" and row["tls_client_cert"] is True
    assert row["tls_client_cert_subject"] == "CN=alice,OU=payments,O=acme,C=US"
    assert row["tls_client_cert_not_after"] == NOT_AFTER
    check_accounting(got)


def test_without_keys_the_connection_is_encrypted_not_undecodable(tls: tuple[str, Capture, Path, Path],
                                                                  tmp_path: Path) -> None:
    version, capture, pcap, _ = tls
    for extra in ((), ("--port", "9092")):  # recognised by content, with or without --port
        got = read(tmp_path, pcap, *extra, name=f"out{len(extra)}")
        assert got.events == []
        (row,) = got.connections
        assert row["tls"] is True and row["tls_decryption"] == NO_KEYS
        assert row["tls_sni"] == SERVER_NAME and row["tls_version"] == ("TLSv1.3" if version == "tls13" else "TLSv1.2")
        assert row["bytes_undecodable"] == row["bytes_decoded"] == row["bytes_gap"] == 0
        assert row["bytes_encrypted"] > 0 and row["bytes_tls_overhead"] > 0
        assert got.summary["non_kafka_connections"] == 0 and got.summary["stream_issue_bytes"] == {}
        assert got.summary["decode_failures"] == 0
        check_accounting(got)


def test_a_key_log_without_this_connections_keys_is_no_keys(tls: tuple[str, Capture, Path, Path],
                                                            tmp_path: Path) -> None:
    _, _, pcap, _ = tls
    other = tmp_path / "other.keylog"
    other.write_text("CLIENT_RANDOM " + "ab" * 32 + " " + "cd" * 48 + "\n")
    got = read(tmp_path, pcap, "--tls-keylog", str(other))
    assert got.events == [] and got.connections[0]["tls_decryption"] == NO_KEYS
    check_accounting(got)


def test_wrong_keys_stop_that_connection_the_others_go_on(pki: Pki, plaintext: Read, tmp_path: Path) -> None:
    good_log, bad_log = tmp_path / "good.keylog", tmp_path / "bad.keylog"
    good = tls_conversation(pki, good_log)
    bad = tls_conversation(pki, bad_log)
    keylog = tmp_path / "keylog.txt"
    keylog.write_text(good_log.read_text() + corrupt_keys(bad_log.read_text()))
    other_client = (CLIENT[0], CLIENT[1] + 1)
    pcap = merge(tmp_path / "two.pcap", write_capture(tmp_path / "good.pcap", good.chunks),
                 write_capture(tmp_path / "bad.pcap", bad.chunks, client=other_client, start_ts=1.7e9 + 5))
    got = read(tmp_path, pcap, "--tls-keylog", str(keylog))
    by_port = {row["client"].rsplit(":", 1)[1]: row for row in got.connections}
    assert by_port[str(CLIENT[1])]["tls_decryption"] == "decrypted"
    assert by_port[str(CLIENT[1] + 1)]["tls_decryption"].startswith("failed: ")
    assert by_port[str(CLIENT[1] + 1)]["bytes_undecodable"] == 0 and by_port[str(CLIENT[1] + 1)]["bytes_encrypted"] > 0
    assert comparable(got.events) == comparable(plaintext.events)  # the good connection's, all of them
    check_accounting(got)


def test_a_capture_starting_mid_connection_is_not_decryptable(tls: tuple[str, Capture, Path, Path],
                                                              tmp_path: Path) -> None:
    _, capture, _, keylog = tls
    start = _first_application_chunk(capture)
    pcap = tmp_path / "mid.pcap"
    write_capture(pcap, capture.chunks[start:], handshake=False)
    for extra in ((), ("--tls-keylog", str(keylog))):
        got = read(tmp_path, pcap, *extra, name=f"out{len(extra)}")
        assert got.events == []
        (row,) = got.connections
        assert row["tls"] is True and row["tls_decryption"] == MID_CONNECTION and row["tls_version"] is None
        assert row["bytes_encrypted"] == row["bytes_seen"] > 0 and row["bytes_undecodable"] == 0
        assert got.summary["non_kafka_connections"] == 0
        check_accounting(got)


def test_a_gap_stops_decryption(tls: tuple[str, Capture, Path, Path], plaintext: Read, tmp_path: Path) -> None:
    _, capture, _, keylog = tls
    # Lose the first segment of the last client chunk that carries application data (the last Metadata request).
    start = _first_application_chunk(capture)
    last_request = [i for i in range(start, len(capture.chunks)) if capture.chunks[i][0]][3]  # requests 1-4
    pcap = tmp_path / "gap.pcap"
    write_capture(pcap, capture.chunks, drop={segment_index(capture.chunks, last_request)})
    got = read(tmp_path, pcap, "--tls-keylog", str(keylog))
    (row,) = got.connections
    assert row["tls_decryption"] == STOPPED_GAP and row["bytes_gap"] > 0
    assert comparable(got.events[:6]) == comparable(plaintext.events)[:6]  # up to the Produce round trip
    # The broker's stream has no gap: its answer may be decrypted before the client's gap is known (when the
    # broker acknowledges the lost bytes); its request is missing.
    assert all(e["direction"] == "response" and e["request_missing"] for e in got.events[6:])
    assert row["bytes_encrypted"] > 0  # the records after the gap, and the closing alerts: not decrypted
    check_accounting(got)


def test_reordered_and_retransmitted_segments_decrypt_the_same(tls: tuple[str, Capture, Path, Path],
                                                                plaintext: Read, tmp_path: Path) -> None:
    _, _, pcap, keylog = tls
    rng = random.Random(5)
    damaged = write_packets(tmp_path / "damaged.pcap", duplicate(reorder(list(rdpcap(str(pcap))), rng), rng))
    got = read(tmp_path, damaged, "--tls-keylog", str(keylog))
    assert comparable(got.events) == comparable(plaintext.events)
    (row,) = got.connections
    assert row["bytes_retransmitted"] > 0 and row["bytes_gap"] == row["bytes_encrypted"] == 0
    assert row["tls_decryption"] == "decrypted"
    check_accounting(got)


def test_a_missing_key_log_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcap = tmp_path / "p.pcap"
    write_capture(pcap, list(kafka_frames())[:2])
    assert main(["read", str(pcap), "-o", str(tmp_path / "o"), "--tls-keylog",
                 str(tmp_path / "nope")]) == ExitCode.USAGE
    assert "--tls-keylog" in capsys.readouterr().err
    assert main(["show", str(pcap), "--tls-keylog", str(tmp_path / "nope")]) == ExitCode.USAGE


def test_show_marks_tls_messages(tls: tuple[str, Capture, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, _, pcap, keylog = tls
    assert main(["show", str(pcap), "--tls-keylog", str(keylog), "--filter", "tls=True"]) == ExitCode.OK
    words = capsys.readouterr().out.split()  # (rich wraps the lines at the terminal's width)
    assert words.count("tls") == words.count("corr=1") + 6 == len(kafka_frames())


def _first_application_chunk(capture: Capture) -> int:
    """The index of the first chunk after the handshake that carries a Kafka frame (a client chunk after the
    server's first flight and the client's Finished)."""
    finished = 0
    for i, (from_client, _) in enumerate(capture.chunks):
        if from_client:
            finished += 1
            if finished == 3:  # ClientHello, then the client's Finished flight, then its first request
                return i
    raise AssertionError("no application data")
