"""The TLS wiring inside the pipeline (inspector/kafka/tls_stream.py, inspector/kafka/pipeline.py), fed stream data
directly: whole, one byte at a time and in random cuts, with trailing garbage; keys that arrive late (the tap's key log
grows); the memory a TLS connection holds, released under ``--max-held``; a plaintext connection's first bytes
that are too few to tell. Real TLS bytes from the in-memory OpenSSL harness (tests/inspector/tls_captures.py)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.limits import DecodeLimits
from inspector.kafka.connection import ConnectionEvent, KafkaMessage, StreamIssue
from inspector.kafka.pipeline import Inspector
from inspector.kafka.tls_stream import STOPPED_RELEASED
from inspector.read.reader import drain_closed
from inspector.rows.summary import Summary
from inspector.tcp.stream_events import ConnectionOpened, StreamData, StreamGap
from inspector.tls.keylog import KeyLog
from inspector.tls.tls_events import DECRYPTED, NO_KEYS
from pcaps.capture_kit.tls_memory import Capture, Pki, make_pki
from tests.inspector.tls_captures import PARTS, kafka_frames, tls_conversation

CLIENT, BROKER = ("10.0.0.1", 40000), ("10.0.0.2", 9092)
Cut = Callable[[bytes], Iterator[bytes]]


def whole(data: bytes) -> Iterator[bytes]:
    yield data


def bytewise(data: bytes) -> Iterator[bytes]:
    for i in range(len(data)):
        yield data[i:i + 1]


def random_cuts(data: bytes) -> Iterator[bytes]:
    rng = random.Random(len(data))
    i = 0
    while i < len(data):
        n = rng.randint(1, 3000)
        yield data[i:i + n]
        i += n


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=["tls13", "tls12"])
def conversation(request: pytest.FixtureRequest, pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    options = {"tls12": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"} if request.param == "tls12" else {}
    return tls_conversation(pki, tmp_path_factory.mktemp(request.param) / "keylog.txt", **options)


class Fed:
    """An Inspector fed one connection's chunks as stream data; what came out, and its connections' rows."""

    def __init__(self, chunks: list[tuple[bool, bytes]], cut: Cut = whole, *, keylog: KeyLog | None = None,
                 syn: bool = True, between: Callable[[int], None] | None = None, ports: set[int] | None = None,
                 **limits: Any) -> None:
        self.inspector = Inspector(keylog=keylog, ports=ports, limits=DecodeLimits(**limits))
        self.events: list[ConnectionEvent] = []
        self.peak_held = 0
        self._feed(ConnectionOpened(1, 0.0, *CLIENT, *BROKER, syn))
        offsets, ts = [0, 0], 0.0
        for i, (from_client, data) in enumerate(chunks):
            if between is not None:
                between(i)
            side = 0 if from_client else 1
            src, dst = (CLIENT, BROKER) if from_client else (BROKER, CLIENT)
            for piece in cut(data):
                ts += 0.001
                self._feed(StreamData(1, side, ts, offsets[side], memoryview(piece), src, dst))
                offsets[side] += len(piece)
        self.events += self.inspector.finish(ts + 1)
        summary = Summary()
        drain_closed(self.inspector, summary, "fed")
        self.rows = summary.connections
        self.summary = summary

    def _feed(self, event: object) -> None:
        """As ``Inspector.segment`` does with what the reassembler returns: dispatched, then released when all
        connections hold more than ``max_held``."""
        inspector = self.inspector
        self.events += inspector._dispatch([event])
        self.peak_held = max(self.peak_held, inspector.held_bytes)
        if inspector.held_bytes > inspector.max_held:
            inspector._release(getattr(event, "ts", 0.0), self.events)

    @property
    def messages(self) -> list[KafkaMessage]:
        return [e for e in self.events if isinstance(e, KafkaMessage)]


def described(messages: list[KafkaMessage]) -> list[tuple[Any, ...]]:
    """What a decrypted message must share with its plaintext twin."""
    return [(m.direction, m.message.api_key, m.message.api_version, m.message.correlation_id, m.frame_offset,
             m.message.status, m.message.body, m.client_id, m.request_missing) for m in messages]


def check_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        for who in ("client", "broker"):
            assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{part}"] for part in PARTS), (who, row)


@pytest.fixture(scope="module")
def plaintext() -> list[tuple[Any, ...]]:
    return described(Fed(list(kafka_frames())).messages)


@pytest.mark.parametrize("cut", [whole, bytewise, random_cuts], ids=["whole", "bytewise", "random"])
def test_any_cut_of_the_stream_decrypts_to_the_plaintext_messages(conversation: Capture, cut: Cut,
                                                                   plaintext: list[tuple[Any, ...]]) -> None:
    fed = Fed(conversation.chunks, cut, keylog=KeyLog(conversation.keylog))
    assert described(fed.messages) == plaintext
    assert all(m.tls is True for m in fed.messages)
    assert not [e for e in fed.events if isinstance(e, StreamIssue)]
    (row,) = fed.rows
    assert row["tls_decryption"] == DECRYPTED and row["bytes_encrypted"] == row["bytes_undecodable"] == 0
    check_rows(fed.rows)
    assert fed.inspector.held_bytes == 0  # everything held was given back


def test_trailing_garbage_after_the_tls_stream_is_undecodable(conversation: Capture,
                                                              plaintext: list[tuple[Any, ...]]) -> None:
    garbage = b"\xff\xfe\x00\x01garbage"
    fed = Fed([*conversation.chunks, (True, garbage)], keylog=KeyLog(conversation.keylog))
    assert described(fed.messages) == plaintext
    (row,) = fed.rows
    assert row["client_bytes_undecodable"] == len(garbage) and row["bytes_encrypted"] == 0
    check_rows(fed.rows)


def test_without_keys_the_connection_is_reported_with_its_bytes_encrypted(conversation: Capture) -> None:
    fed = Fed(conversation.chunks, bytewise)
    assert fed.messages == [] and not fed.events
    (row,) = fed.rows
    assert row["tls"] is True and row["tls_decryption"] == NO_KEYS and row["bytes_undecodable"] == 0
    assert row["bytes_seen"] == sum(len(d) for _, d in conversation.chunks) == row["bytes_encrypted"] + row[
        "bytes_tls_overhead"]
    assert fed.summary.non_kafka_connections == 0
    check_rows(fed.rows)


def test_keys_written_before_the_first_request_decrypt_everything(conversation: Capture,
                                                                  plaintext: list[tuple[Any, ...]]) -> None:
    """The tap's key log grows as clients connect: keys fed after the handshake's records were seen still
    decrypt what follows them."""
    keylog = KeyLog()
    first_request = _nth_client_chunk(conversation, 2)

    def between(i: int) -> None:
        if i == first_request:
            keylog.feed(conversation.keylog)

    fed = Fed(conversation.chunks, keylog=keylog, between=between)
    (row,) = fed.rows
    check_rows(fed.rows)
    # TLS 1.3: the handshake's encrypted records went by without keys; the session finds the traffic keys' start.
    assert described(fed.messages) == plaintext and row["tls_decryption"] == DECRYPTED


def test_keys_written_after_the_first_request_decrypt_from_there(conversation: Capture,
                                                                 plaintext: list[tuple[Any, ...]]) -> None:
    """The first request's record goes by without keys: a hole in the client's plaintext, whose framer resyncs;
    the messages after it decode (the first response's request is missing)."""
    keylog = KeyLog()
    second = _nth_client_chunk(conversation, 3)

    def between(i: int) -> None:
        if i == second - 1:  # after the first request, before the ApiVersions response
            keylog.feed(conversation.keylog)

    fed = Fed(conversation.chunks, keylog=keylog, between=between)
    (row,) = fed.rows
    check_rows(fed.rows)
    assert row["tls_decryption"] == DECRYPTED and row["client_bytes_encrypted"] > 0
    got = described(fed.messages)
    assert got[0][0] == "response" and got[0][-1] is True  # ApiVersions' response: its request is missing
    # The client's plaintext offsets count what was decrypted (the first request's bytes were not).
    assert [m[:4] + m[5:] for m in got[1:]] == [m[:4] + m[5:] for m in plaintext[2:]]


def test_a_tls_connection_holding_too_much_is_released(conversation: Capture) -> None:
    """The 47 KB Metadata response comes in records of 16 KB: held as incomplete records, they exceed a
    --max-held of 4 KB; the connection is released, its decryption stops, every byte stays counted."""
    fed = Fed(conversation.chunks, random_cuts, keylog=KeyLog(conversation.keylog), max_held=4096)
    (row,) = fed.rows
    assert fed.peak_held > 4096 and fed.inspector.released >= 1 and row["tls_decryption"] == STOPPED_RELEASED
    assert [m.message.correlation_id for m in fed.messages][:3] == [1, 1, 2]  # what came before is decoded
    assert row["broker_bytes_encrypted"] > 0 and fed.inspector.held_bytes == 0
    check_rows(fed.rows)


def test_a_gap_before_any_byte_then_tls_records_is_not_decryptable(conversation: Capture) -> None:
    """A connection whose first bytes were lost (a gap, then records): seen from its middle."""
    inspector = Inspector(keylog=KeyLog(conversation.keylog))
    inspector._dispatch([ConnectionOpened(1, 0.0, *CLIENT, *BROKER, True)])
    start = _nth_client_chunk(conversation, 2)
    skipped = [sum(len(d) for c, d in conversation.chunks[:start] if c == side) for side in (True, False)]
    inspector._dispatch([StreamGap(1, 0, 0.5, 0, skipped[0], "acked but not captured", CLIENT, BROKER)])
    offsets = [skipped[0], skipped[1]]
    for from_client, data in conversation.chunks[start:]:
        side = 0 if from_client else 1
        inspector._dispatch([StreamData(1, side, 1.0, offsets[side], memoryview(data), CLIENT, BROKER)])
        offsets[side] += len(data)
    inspector.finish(2.0)
    summary = Summary()
    drain_closed(inspector, summary, "fed")
    (row,) = summary.connections
    assert row["tls_decryption"].startswith("not decryptable") and row["bytes_undecodable"] == 0
    assert row["client_bytes_gap"] == skipped[0]
    check_rows(summary.connections)


def test_a_plaintext_connection_starting_with_few_bytes_is_decoded(plaintext: list[tuple[Any, ...]]) -> None:
    """Fewer bytes than tell TLS from Kafka are held, then decoded as plaintext; a first piece from the other
    side, a gap or the end decide too."""
    for syn in (True, False):
        fed = Fed(list(kafka_frames()), bytewise, syn=syn)
        assert described(fed.messages) == plaintext, syn
        assert all(m.tls is not True for m in fed.messages)
        check_rows(fed.rows)
        assert fed.rows[0]["tls"] is False
    # A ClientHello's first bytes, then the other side speaks: plaintext, every byte counted.
    fed = Fed([(True, b"\x16\x03"), (False, b"\x00\x00"), (True, b"\x01\x02")], ports={9092})
    (row,) = fed.rows
    assert row["tls"] is False and (row["client_bytes_seen"], row["broker_bytes_seen"]) == (4, 2)
    check_rows(fed.rows)


def test_a_tls_record_stream_that_looks_like_a_client_hello_prefix_ends_early() -> None:
    """Three bytes of a ClientHello header, then the connection ends: plaintext, counted."""
    fed = Fed([(True, b"\x16\x03\x01")], syn=True, ports={9092})
    (row,) = fed.rows
    assert row["tls"] is False and row["bytes_seen"] == row["bytes_undecodable"] == 3


def _nth_client_chunk(capture: Capture, n: int) -> int:
    """The index of the client's ``n``-th chunk (0: its ClientHello; 2: its first request)."""
    return [i for i, (from_client, _) in enumerate(capture.chunks) if from_client][n]


def test_the_conversation_fixture_is_what_the_tests_assume(conversation: Capture, tmp_path: Path) -> None:
    first_request = conversation.chunks[_nth_client_chunk(conversation, 2)][1]
    assert first_request[0] == 23 and conversation.chunks[0][1][:1] == b"\x16"
