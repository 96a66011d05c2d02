"""The TLS core on the real TLS captures (pcaps/tls/: Tansu behind stunnel4, real clients, their NSS key logs):
every connection's bytes decrypt with the key log, the plaintext frames as many Kafka messages as tshark decodes
with the same key log, the accounting adds up, and the mutual-TLS client is named as Kafka names it; tshark counts
as many in each capture's plaintext twin (stunnel's hop to the broker, recorded beside it)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from inspector.capture.file import open_capture
from inspector.capture.packets import Segment, segments
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import ConnectionOpened, StreamData
from inspector.tls.keylog import KeyLog
from inspector.tls.session import TlsSession
from inspector.tls.tls_events import TlsApplicationData

TLS = Path(__file__).resolve().parents[3] / "pcaps" / "tls"
#: capture -> (TLS version, cipher suite, Kafka messages tshark 4.0 decodes with the key log)
KEYED = {
    "tansu-tls13-kafka-python": ("TLSv1.3", "TLS_AES_256_GCM_SHA384", 218),
    "tansu-tls12-aiokafka": ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 40),
    "tansu-tls13-sasl-scram": ("TLSv1.3", "TLS_AES_128_GCM_SHA256", 72),
    "tansu-tls12-mtls": ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 30),
    "tansu-tls12-kafkajs": ("TLSv1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 40),
}
#: capture -> Kafka messages tshark 4.0 decodes in its plaintext twin (NAME.plaintext.pcap, stunnel's hop to the
#: broker): as many as in the decrypted capture, but for 2 Fetch responses of kafka-python's that came after the
#: client had closed (stunnel could not pass them on); librdkafka's capture has no key log, only its twin shows them.
TWINS = {
    "tansu-tls13-kafka-python": 218 + 2,
    "tansu-tls12-aiokafka": 40,
    "tansu-tls13-sasl-scram": 72,
    "tansu-tls12-mtls": 30,
    "tansu-tls12-kafkajs": 40,
    "tansu-tls13-confluent-kafka": 37,
}


def _frames(data: bytes) -> int:
    """Kafka frames (4-byte length prefixes) in one direction's plaintext, which must end on a frame."""
    pos = count = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        assert 0 <= length <= len(data) - pos - 4
        pos += 4 + length
        count += 1
    return count


def _sessions(name: str, keylog: KeyLog | None) -> list[tuple[TlsSession, int, int]]:
    """Each TCP connection of the capture through a TlsSession: (session, bytes fed, Kafka frames)."""
    reasm = Reassembler()
    sessions: dict[int, TlsSession] = {}
    plain: dict[tuple[int, int], bytearray] = {}
    fed: dict[int, int] = {}
    with open_capture(str(TLS / f"{name}.pcap")) as reader:
        for seg in segments(reader):
            if not isinstance(seg, Segment):
                continue
            for ev in reasm.feed(seg):
                if isinstance(ev, ConnectionOpened):
                    assert ev.saw_syn  # a is the client
                    sessions[ev.conn_id] = TlsSession(keylog)
                elif isinstance(ev, StreamData):
                    fed[ev.conn_id] = fed.get(ev.conn_id, 0) + len(ev.data)
                    for out in sessions[ev.conn_id].feed(ev.side == 0, bytes(ev.data), ev.ts):
                        if isinstance(out, TlsApplicationData):
                            plain.setdefault((ev.conn_id, out.from_client), bytearray()).extend(out.data)
    result = []
    for conn_id, session in sessions.items():
        session.finish(0.0)
        frames = sum(_frames(bytes(plain.get((conn_id, side), b""))) for side in (True, False))
        result.append((session, fed.get(conn_id, 0), frames))
    return result


def _keylog(name: str) -> KeyLog:
    keylog = KeyLog()
    keylog.feed((TLS / f"{name}.keylog").read_text())
    keylog.finish()
    return keylog


@pytest.mark.parametrize("name", sorted(KEYED))
def test_every_byte_decrypts_and_frames_as_tshark_counts(name: str) -> None:
    version, suite, messages = KEYED[name]
    sessions = _sessions(name, _keylog(name))
    assert sum(frames for _, _, frames in sessions) == messages
    for session, fed, _ in sessions:
        counts = session.counts()
        assert counts.encrypted == counts.malformed == counts.pending == 0
        assert counts.control + counts.application + counts.overhead == fed
        d = session.description
        assert (d.tls_version, d.cipher_suite) == (version, suite)


def test_without_the_key_log_the_bytes_are_encrypted_and_described() -> None:
    for session, fed, frames in _sessions("tansu-tls13-confluent-kafka", None):  # librdkafka writes no key log
        counts = session.counts()
        assert frames == 0 and counts.application == 0 and counts.malformed == 0
        assert counts.control + counts.encrypted + counts.overhead + counts.pending == fed
        assert session.description.tls_version == "TLSv1.3"
        assert session.description.cipher_suite == "TLS_CHACHA20_POLY1305_SHA256"


def test_the_client_certificate_names_the_principal() -> None:
    principals = {s.description.principal for s, _, _ in _sessions("tansu-tls12-mtls", _keylog("tansu-tls12-mtls"))}
    assert "User:CN=alice,OU=payments,O=acme" in principals


def _broker_port(pcap: Path) -> str:
    ports = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0", "-T", "fields",
                            "-e", "tcp.dstport"], capture_output=True, text=True, timeout=120).stdout.split()
    assert len(set(ports)) == 1, ports
    return ports[0]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_decodes_as_many_kafka_messages_with_the_key_log() -> None:
    name = "tansu-tls12-aiokafka"
    pcap, keylog = TLS / f"{name}.pcap", TLS / f"{name}.keylog"
    port = _broker_port(pcap)
    out = subprocess.run(["tshark", "-r", str(pcap), "-o", f"tls.keylog_file:{keylog}", "-d", f"tcp.port=={port},tls",
                          "-d", f"tls.port=={port},kafka", "-Y", "kafka", "-T", "fields", "-e", "kafka.api_key"],
                         capture_output=True, text=True, timeout=120).stdout.splitlines()
    assert len(out) == KEYED[name][2]  # one line per Kafka message (a frame each, in this capture)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.parametrize("name", sorted(TWINS))
def test_tshark_counts_the_plaintext_twins_messages(name: str) -> None:
    pcap = TLS / f"{name}.plaintext.pcap"
    out = subprocess.run(["tshark", "-r", str(pcap), "-d", f"tcp.port=={_broker_port(pcap)},kafka", "-Y", "kafka",
                          "-T", "fields", "-e", "kafka.len"], capture_output=True, text=True, timeout=120).stdout
    assert sum(len(line.split(",")) for line in out.splitlines() if line) == TWINS[name]  # a kafka.len per message
