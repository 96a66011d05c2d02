"""The TLS record layer (inspector/tls/tls_records.py): records split from a byte stream fed whole, a byte at a
time and in odd chunks, with trailing garbage, over-long and truncated records; handshake messages
reassembled across records, with their size cap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from inspector.tls.tls_records import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    HANDSHAKE,
    HEADER_LEN,
    MAX_FRAGMENT,
    SNIFF_HELLO,
    SNIFF_PLAIN,
    SNIFF_RECORDS,
    SNIFF_WINDOW,
    HandshakeMessage,
    HandshakeReassembler,
    Record,
    RecordSplitter,
    check_header,
    looks_like_records,
    sniff,
)
from tests.frames import api_versions_request_v0, frame


def record(content_type: int, fragment: bytes, version: int = 0x0303) -> bytes:
    return bytes([content_type]) + version.to_bytes(2, "big") + len(fragment).to_bytes(2, "big") + fragment


def message(msg_type: int, body: bytes) -> bytes:
    return bytes([msg_type]) + len(body).to_bytes(3, "big") + body


STREAM = (record(HANDSHAKE, message(1, b"hello" * 20), 0x0301) + record(CHANGE_CIPHER_SPEC, b"\x01")
          + record(APPLICATION_DATA, bytes(range(256)) * 64) + record(ALERT, b"\x01\x00")
          + record(APPLICATION_DATA, b"") + record(APPLICATION_DATA, b"x" * MAX_FRAGMENT))


def chunked(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` cut into pieces of the given sizes, cycled."""
    out = []
    pos = 0
    i = 0
    while pos < len(data):
        size = max(1, sizes[i % len(sizes)])
        out.append(data[pos:pos + size])
        pos += size
        i += 1
    return out


def split(pieces: list[bytes]) -> tuple[list[tuple[int, int, bytes, float, bytes]], RecordSplitter]:
    splitter = RecordSplitter()
    out = []
    for ts, piece in enumerate(pieces):
        records: list[Record] = splitter.feed(piece, float(ts))
        out.extend((r.content_type, r.version, r.fragment, r.ts, r.header) for r in records)
        assert splitter.pending <= HEADER_LEN + MAX_FRAGMENT  # at most one incomplete record held
    return out, splitter


def fields(records: list[tuple[int, int, bytes, float, bytes]]) -> list[tuple[int, int, bytes]]:
    return [(t, v, f) for t, v, f, _, _ in records]


def test_whole_bytewise_and_odd_chunks_give_the_same_records() -> None:
    whole, splitter = split([STREAM])
    assert [t for t, *_ in whole] == [HANDSHAKE, CHANGE_CIPHER_SPEC, APPLICATION_DATA, ALERT, APPLICATION_DATA,
                                      APPLICATION_DATA]
    assert whole[0][1] == 0x0301 and whole[0][4] == STREAM[:5] and whole[5][2] == b"x" * MAX_FRAGMENT
    assert splitter.records == 6 and splitter.pending == 0 and splitter.error is None
    bytewise, _ = split(chunked(STREAM, [1]))
    odd, _ = split(chunked(STREAM, [3, 1, 7, 250, 4, 9000]))
    assert fields(bytewise) == fields(odd) == fields(whole)


def test_a_record_carries_the_timestamp_of_the_bytes_that_completed_it() -> None:
    pieces = [STREAM[:3], STREAM[3:50], STREAM[50:200]]
    got, _ = split(pieces)
    assert got[0][3] == 2.0  # the first record (109 bytes) is complete with the third piece


@given(st.lists(st.integers(min_value=1, max_value=700), min_size=1, max_size=30))
def test_any_chunking_gives_the_same_records(sizes: list[int]) -> None:
    got, _ = split(chunked(STREAM[:20000], sizes))
    assert fields(got) == fields(split([STREAM[:20000]])[0])


def test_trailing_garbage_is_malformed_and_stops_the_direction() -> None:
    garbage = b"GET / HTTP/1.1\r\n\r\n"
    for pieces in ([STREAM + garbage], chunked(STREAM + garbage, [1]), chunked(STREAM + garbage, [5, 13, 1])):
        got, splitter = split(pieces)
        assert fields(got) == fields(split([STREAM])[0])
        assert splitter.error == "unknown record content type 71"
        assert splitter.malformed_bytes == len(garbage) and splitter.pending == 0
        assert splitter.feed(record(HANDSHAKE, b"\x01\x00\x00\x00"), 9.0) == []  # stopped: counted, not parsed
        assert splitter.malformed_bytes == len(garbage) + 9


def test_the_record_maximum_and_over_it() -> None:
    assert check_header(record(APPLICATION_DATA, b"")[:3] + MAX_FRAGMENT.to_bytes(2, "big")) is None
    over = bytes([APPLICATION_DATA, 3, 3]) + (MAX_FRAGMENT + 1).to_bytes(2, "big")
    assert check_header(over) == f"record length {MAX_FRAGMENT + 1} over the TLS maximum {MAX_FRAGMENT}"
    splitter = RecordSplitter()
    assert splitter.feed(record(ALERT, b"\x02\x28") + over + b"\0" * 100, 1.0)[0].fragment == b"\x02\x28"
    assert splitter.error is not None and splitter.malformed_bytes == 105


def test_bad_versions_and_content_types() -> None:
    assert check_header(bytes([HANDSHAKE, 3, 5, 0, 1])) == "bad record version 0x0305"
    assert check_header(bytes([HANDSHAKE, 2, 0, 0, 1])) == "bad record version 0x0200"
    assert check_header(bytes([0x80, 3, 1, 0, 1])) == "unknown record content type 128"
    assert check_header(bytes([24, 3, 0, 0, 1])) is None  # heartbeat, SSL 3.0 version


def test_a_truncated_last_record_becomes_malformed_at_finish() -> None:
    splitter = RecordSplitter()
    assert len(splitter.feed(STREAM[:-10], 1.0)) == 5
    assert splitter.pending == HEADER_LEN + MAX_FRAGMENT - 10
    assert splitter.finish() == HEADER_LEN + MAX_FRAGMENT - 10
    assert splitter.pending == 0 and splitter.malformed_bytes == HEADER_LEN + MAX_FRAGMENT - 10
    assert splitter.error == f"truncated record ({HEADER_LEN + MAX_FRAGMENT - 10} bytes at the end of the stream)"
    clean = RecordSplitter()
    clean.feed(STREAM, 1.0)
    assert clean.finish() == 0 and clean.error is None


HANDSHAKE_STREAM = (message(1, b"a" * 300) + message(2, b"") + message(11, bytes(range(256)) * 100)
                    + message(20, b"f" * 32))


def reassemble(fragments: list[bytes]) -> list[HandshakeMessage]:
    r = HandshakeReassembler()
    out: list[HandshakeMessage] = []
    for fragment in fragments:
        out.extend(r.feed(fragment))
    assert r.pending == 0 and r.error is None
    return out


def test_handshake_messages_across_and_within_records() -> None:
    whole = reassemble([HANDSHAKE_STREAM])
    assert [(m.msg_type, len(m.body)) for m in whole] == [(1, 300), (2, 0), (11, 25600), (20, 32)]
    assert b"".join(m.raw for m in whole) == HANDSHAKE_STREAM
    assert reassemble(chunked(HANDSHAKE_STREAM, [1])) == whole
    assert reassemble(chunked(HANDSHAKE_STREAM, [2, 5, 16384, 3])) == whole


def test_a_message_over_the_cap_stops_the_reassembler() -> None:
    r = HandshakeReassembler(limit=1000)
    assert r.feed(message(2, b"s" * 10)) == [HandshakeMessage(2, b"s" * 10, message(2, b"s" * 10))]
    assert r.feed(bytes([11]) + (1001).to_bytes(3, "big") + b"x" * 50) == []
    assert r.error == "handshake message type 11 of 1001 bytes over the limit 1000" and r.pending == 0
    assert r.feed(message(20, b"f")) == []  # stopped: memory stays bounded


def test_a_lost_record_drops_messages_until_a_new_epoch() -> None:
    r = HandshakeReassembler()
    assert r.feed(HANDSHAKE_STREAM[:100]) == []
    r.lose()
    assert r.lost and r.pending == 0 and r.feed(HANDSHAKE_STREAM[100:]) == []
    r.restart()
    assert [m.msg_type for m in r.feed(message(24, b"\x00"))] == [24]


# -- recognising TLS from a connection's first bytes --------------------------------------------------------

HELLO = record(HANDSHAKE, message(1, b"hello" * 20), 0x0301)
MIDDLE = record(APPLICATION_DATA, b"x" * 100) + record(APPLICATION_DATA, b"y" * 30) + record(ALERT, b"\x01\x00")
KAFKA = frame(api_versions_request_v0(1))


def test_sniff_tells_a_client_hello_records_and_plaintext() -> None:
    for mid_stream in (False, True):
        assert sniff(HELLO, mid_stream) == SNIFF_HELLO
        assert sniff(KAFKA, mid_stream) == SNIFF_PLAIN
    assert sniff(MIDDLE, mid_stream=True) == SNIFF_RECORDS
    assert sniff(MIDDLE, mid_stream=False) == SNIFF_PLAIN  # a stream's start that is not a ClientHello
    # too few bytes: None while they agree, the verdict as soon as one disagrees
    assert [sniff(HELLO[:n], False) for n in range(6)] == [None] * 6
    assert [sniff(MIDDLE[:n], True) for n in range(5)] == [None] * 5
    assert sniff(b"\x17\x02", True) == SNIFF_PLAIN and sniff(b"\x00", True) == SNIFF_PLAIN


def test_records_are_recognised_conservatively() -> None:
    assert looks_like_records(MIDDLE) is True
    assert looks_like_records(MIDDLE[:50]) is True  # the first record's header, its fragment cut
    assert looks_like_records(MIDDLE + b"\x00\x00\x00\x10\x00") is False  # a next header that cannot be TLS
    assert looks_like_records(record(HANDSHAKE, b"")) is False  # an empty record
    assert looks_like_records(b"\x17\x03\x03" + (MAX_FRAGMENT + 1).to_bytes(2, "big")) is False
    assert looks_like_records(b"\x18\x03\x03\x00\x10") is False  # heartbeat: not a connection's business
    assert looks_like_records(b"\x17\x03\x05\x00\x10") is False  # no TLS 1.5
    # only the first SNIFF_WINDOW bytes are looked at
    far = record(APPLICATION_DATA, b"z" * (SNIFF_WINDOW - HEADER_LEN)) + b"\xff\xff\xff\xff\xff"
    assert looks_like_records(far) is True


@given(st.binary(min_size=4, max_size=64).map(lambda b: b"\x00" + b))
def test_a_kafka_stream_cut_at_a_frame_never_looks_like_records(data: bytes) -> None:
    """A Kafka frame's length prefix starts with a byte of 0..5 (frames under 100 MB): never a record type."""
    assert looks_like_records(data) is False and sniff(data, True) == SNIFF_PLAIN
