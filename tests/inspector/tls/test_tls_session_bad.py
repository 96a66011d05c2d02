"""Bad input to a TLS session (inspector/tls/session.py) is data, never an exception: no keys, wrong keys,
keys that arrive after the records, a capture that starts mid-connection, a truncated last record, alerts,
garbage and over-long records, a renegotiation, a suite that cannot be decrypted, damaged bytes anywhere —
and in every case each byte fed is counted once."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.tls.keylog import KeyLog
from inspector.tls.keys import key_block
from inspector.tls.session import TlsSession
from inspector.tls.tls_events import (
    DECRYPTED,
    NO_KEYS,
    TlsAlert,
    TlsApplicationData,
    TlsDecryptionStopped,
    TlsEncrypted,
    TlsEvent,
    TlsMalformed,
    TlsNoKeys,
    TlsRenegotiation,
)
from inspector.tls.tls_records import MAX_FRAGMENT, MAX_HANDSHAKE_MESSAGE
from inspector.tls.tls_registry import CIPHER_SUITES
from pcaps.capture_kit.tls_memory import MESSAGES, SERVER_NAME, Capture, Pki, contexts, converse, make_pki
from tests.inspector.tls.test_tls_cipher import seal12
from tests.inspector.tls.test_tls_handshake import ext, server_hello
from tests.inspector.tls.test_tls_keys import RFC8448_CLIENT_HELLO, RFC8448_KEYLOG
from tests.inspector.tls.test_tls_session import Chunks, app_data, assert_accounted, feed, messages, rfc8448_chunks

E = TypeVar("E")
MID_CONNECTION = "not decryptable: no handshake at the start (capture started mid-connection)"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls13(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return converse(*contexts(pki, client_cert=True), tmp_path_factory.mktemp("k") / "keylog.txt")


@pytest.fixture(scope="module")
def tls12(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA"), tmp_path_factory.mktemp("k") / "keylog.txt")


def of(events: list[TlsEvent], cls: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, cls)]


def encrypted_bytes(events: list[TlsEvent]) -> int:
    return sum(e.size for e in events if isinstance(e, TlsEncrypted))


def per_chunk(capture: Capture) -> list[dict[bool, bytes]]:
    """The application data each chunk of the capture delivers when the keys are known from the start."""
    session = TlsSession(KeyLog(capture.keylog))
    return [app_data(session.feed(side, data, float(i))) for i, (side, data) in enumerate(capture.chunks)]


def first_app_chunk(capture: Capture) -> int:
    return next(i for i, got in enumerate(per_chunk(capture)) if got[True] or got[False])


@pytest.mark.parametrize("version", ["tls13", "tls12"])
@pytest.mark.parametrize("keylog", [None, ""], ids=["no-keylog", "empty-keylog"])
def test_no_keys_counted_as_encrypted_and_reported_once(version: str, keylog: str | None,
                                                        request: pytest.FixtureRequest) -> None:
    capture: Capture = request.getfixturevalue(version)
    session = TlsSession(None if keylog is None else KeyLog(keylog))
    events = feed(session, capture.chunks) + session.finish(99.0)
    assert len(of(events, TlsNoKeys)) == 1 and not of(events, TlsApplicationData)
    assert session.description.decryption == NO_KEYS
    assert session.counts().encrypted == encrypted_bytes(events) > sum(len(d) for d in capture.sent.values())
    assert_accounted(session, capture.chunks)
    desc = session.description
    assert desc.sni == SERVER_NAME and desc.tls_version == capture.version
    if version == "tls13":
        assert desc.client_cert is None and desc.server_certificate is None  # in the encrypted handshake
        assert not of(events, TlsAlert)  # TLS 1.3 alerts are application_data records
    else:
        assert desc.server_certificate is not None and desc.client_cert is False
        assert [(e.from_client, e.name) for e in of(events, TlsAlert)] == [(True, "encrypted alert"),
                                                                          (False, "encrypted alert")]


def _corrupt(keylog: str) -> str:
    """The key log with every secret's last hex digit changed."""
    return "".join(line[:-1] + ("0" if line[-1] != "0" else "1") + "\n" if line and not line.startswith("#") else
                   line + "\n" for line in keylog.splitlines())


@pytest.mark.parametrize("version", ["tls13", "tls12"])
def test_wrong_keys_stop_that_connection_only(version: str, pki: Pki, tmp_path: Path,
                                              request: pytest.FixtureRequest) -> None:
    bad: Capture = request.getfixturevalue(version)
    good = converse(*contexts(pki, tls12="ECDHE-RSA-CHACHA20-POLY1305" if version == "tls12" else None),
                    tmp_path / "keylog.txt")
    shared = KeyLog(_corrupt(bad.keylog) + good.keylog)
    wrong, right = TlsSession(shared), TlsSession(shared)
    events = feed(wrong, bad.chunks)
    assert app_data(feed(right, good.chunks)) == good.sent and right.description.decryption == DECRYPTED
    (stopped,) = of(events, TlsDecryptionStopped)
    assert stopped.reason.startswith("failed: bad record")
    assert wrong.description.decryption == stopped.reason and not of(events, TlsApplicationData)
    assert not of(events, TlsNoKeys)
    assert_accounted(wrong, bad.chunks)
    assert wrong.counts().encrypted == encrypted_bytes(events) > 0


@pytest.mark.parametrize("version", ["tls13", "tls12"])
def test_keys_arriving_after_the_records(version: str, request: pytest.FixtureRequest) -> None:
    """The key log is empty while the handshake and the first application records go by, then its text
    arrives in odd chunks: the records after are decrypted (TLS 1.3: the sequence found again by trying
    the handshake and traffic keys)."""
    capture: Capture = request.getfixturevalue(version)
    split = first_app_chunk(capture) + 1
    log = KeyLog()
    session = TlsSession(log)
    before = feed(session, capture.chunks[:split])
    assert len(of(before, TlsNoKeys)) == 1 and not of(before, TlsApplicationData)
    for i in range(0, len(capture.keylog), 37):
        log.feed(capture.keylog[i:i + 37])
    after = feed(session, capture.chunks[split:], ts0=split)
    expected = {True: b"", False: b""}
    for got in per_chunk(capture)[split:]:
        expected = {side: expected[side] + got[side] for side in (True, False)}
    assert app_data(after) == expected and expected[True] and expected[False]
    assert session.description.decryption == DECRYPTED and not of(after, TlsEncrypted)
    assert_accounted(session, capture.chunks)


def test_tls13_traffic_keys_arriving_after_the_handshake_keys(tls13: Capture) -> None:
    lines = tls13.keylog.splitlines(keepends=True)
    handshake = "".join(line for line in lines if "HANDSHAKE" in line)
    log = KeyLog(handshake)
    session = TlsSession(log)
    split = first_app_chunk(tls13) + 1
    before = feed(session, tls13.chunks[:split])
    assert session.description.principal == "User:CN=alice,OU=payments,O=acme,C=US"  # the handshake decrypted
    assert of(before, TlsEncrypted) and not of(before, TlsApplicationData)
    log.feed("".join(line for line in lines if "HANDSHAKE" not in line)[:-1])  # the last line without its newline
    partial = feed(session, tls13.chunks[split:split + 1], ts0=split)
    log.feed("\n")
    rest = feed(session, tls13.chunks[split + 1:], ts0=split + 1)
    expected = {True: b"", False: b""}
    for got in per_chunk(tls13)[split:]:
        expected = {side: expected[side] + got[side] for side in (True, False)}
    assert app_data(partial + rest) == expected and expected[True] and expected[False]
    assert session.description.decryption == DECRYPTED
    assert_accounted(session, tls13.chunks)


def test_a_capture_that_starts_mid_connection(tls13: Capture) -> None:
    split = first_app_chunk(tls13)
    session = TlsSession(KeyLog(tls13.keylog))
    chunks = tls13.chunks[split:]
    events = feed(session, chunks)
    assert [e.reason for e in of(events, TlsDecryptionStopped)] == [MID_CONNECTION]
    assert session.description.decryption == MID_CONNECTION and not of(events, TlsApplicationData)
    assert session.counts().encrypted == sum(len(d) for _, d in chunks)
    mid_record = TlsSession(KeyLog(tls13.keylog))
    cut = [(chunks[0][0], chunks[0][1][3:])] + chunks[1:]
    events = feed(mid_record, cut)
    assert of(events, TlsMalformed) and mid_record.description.decryption == MID_CONNECTION
    assert_accounted(mid_record, cut)


def test_a_truncated_last_record(tls12: Capture) -> None:
    chunks = tls12.chunks[:-1] + [(tls12.chunks[-1][0], tls12.chunks[-1][1][:-3])]
    session = TlsSession(KeyLog(tls12.keylog))
    feed(session, chunks)
    held = session.counts().pending
    assert held > 0
    (malformed,) = session.finish(50.0)
    assert isinstance(malformed, TlsMalformed) and malformed.reason.startswith(f"truncated record ({held} bytes")
    assert session.counts().malformed == held and session.counts().pending == 0
    assert_accounted(session, chunks)


@pytest.mark.parametrize("tls12", [True, False], ids=["tls12-plaintext-alert", "tls13-encrypted-alert"])
def test_a_failed_handshake_and_its_alert(pki: Pki, tmp_path: Path, tls12: bool) -> None:
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # trusts no CA: it refuses the server's certificate
    _, server_ctx = contexts(pki, tls12="ECDHE-RSA-AES128-GCM-SHA256" if tls12 else None)
    if tls12:
        client_ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    capture = converse(client_ctx, server_ctx, tmp_path / "keylog.txt", expect_failure=True)
    session = TlsSession(KeyLog(capture.keylog))
    events = feed(session, capture.chunks)
    (alert,) = of(events, TlsAlert)
    assert alert.from_client and alert.level == 2 and alert.name == "unknown_ca"
    assert session.description.last_alert == "client fatal unknown_ca"
    assert_accounted(session, capture.chunks)


def test_garbage_after_the_handshake_stops_that_direction_only(tls13: Capture) -> None:
    split = first_app_chunk(tls13)
    garbage = b"\x00\x00\x00\x2a" + b"kafka in the clear?"
    chunks = tls13.chunks[:split] + [(True, garbage)] + tls13.chunks[split:]
    session = TlsSession(KeyLog(tls13.keylog))
    events = feed(session, chunks)
    (malformed,) = of(events, TlsMalformed)
    assert malformed.from_client
    assert malformed.reason == "unknown record content type 0"
    assert app_data(events)[False] == tls13.sent[False] and app_data(events)[True] == b""
    client_after = sum(len(d) for s, d in tls13.chunks[split:] if s)
    assert session.counts(True).malformed == len(garbage) + client_after
    assert_accounted(session, chunks)


def test_an_oversized_record_is_malformed(tls13: Capture) -> None:
    split = first_app_chunk(tls13)
    oversized = bytes([23, 3, 3]) + (MAX_FRAGMENT + 1).to_bytes(2, "big") + bytes(MAX_FRAGMENT + 1)
    chunks = tls13.chunks[:split] + [(False, oversized)]
    session = TlsSession(KeyLog(tls13.keylog))
    events = feed(session, chunks)
    assert [e.reason for e in of(events, TlsMalformed)] == [
        f"record length {MAX_FRAGMENT + 1} over the TLS maximum {MAX_FRAGMENT}"]
    assert session.counts(False).malformed == len(oversized)
    assert_accounted(session, chunks)


def test_tls12_renegotiation_is_reported_and_stops_decryption(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-GCM-SHA256"), tmp_path / "keylog.txt", close=False)
    suite = CIPHER_SUITES[0xC02F]
    master = bytes.fromhex(capture.keylog.split()[-1])
    client_random = bytes.fromhex(capture.keylog.split()[-2])
    server_random = next(d for s, d in capture.chunks if not s)[11:43]
    kb = key_block("sha256", master, client_random, server_random, 0, 16, 4)
    server_records = 1 + sum(1 for side, _ in MESSAGES if not side)  # its Finished, then one record a message
    hello_request = seal12(suite, kb.server_key, kb.server_iv, b"", server_records, 22, b"\x00\x00\x00\x00")
    later = seal12(suite, kb.server_key, kb.server_iv, b"", server_records + 1, 23, b"after")
    chunks = capture.chunks + [(False, hello_request), (False, later)]
    session = TlsSession(KeyLog(capture.keylog))
    events = feed(session, chunks)
    assert app_data(events) == capture.sent
    assert [type(e).__name__ for e in events[-4:]] == ["TlsHandshakeMessage", "TlsRenegotiation",
                                                       "TlsDecryptionStopped", "TlsEncrypted"]
    assert session.description.decryption == "stopped: renegotiation"
    assert_accounted(session, chunks)
    # without keys, a second ChangeCipherSpec shows it
    blind = TlsSession(None)
    ccs = (True, bytes([20, 3, 3, 0, 40]) + bytes(40))
    events = feed(blind, capture.chunks + [ccs])
    assert of(events, TlsRenegotiation) and blind.description.decryption == "stopped: renegotiation"
    assert_accounted(blind, capture.chunks + [ccs])


def test_a_suite_or_version_that_cannot_be_decrypted() -> None:
    hello = bytes.fromhex(RFC8448_CLIENT_HELLO)

    def handshake_record(body: bytes) -> bytes:
        message = b"\x02" + len(body).to_bytes(3, "big") + body
        return bytes([22, 3, 3]) + len(message).to_bytes(2, "big") + message

    for sh, status in (
        (server_hello(b"\x05" * 32, 0x000A), "not decryptable: cipher suite TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
        (server_hello(b"\x05" * 32, 0x1304, ext(43, b"\x03\x04")),
         "not decryptable: cipher suite TLS_AES_128_CCM_SHA256"),
        (server_hello(b"\x05" * 32, 0x002F)[:-2].replace(b"\x03\x03", b"\x03\x02", 1), "not decryptable: TLSv1.1"),
        (server_hello(b"\x05" * 32, 0x1301),  # a TLS 1.3 suite in a TLS 1.2 ServerHello
         "not decryptable: cipher suite TLS_AES_128_GCM_SHA256"),
    ):
        ccs, record = bytes([20, 3, 3, 0, 1, 1]), bytes([23, 3, 3, 0, 40]) + bytes(40)
        chunks: Chunks = [(True, hello), (False, handshake_record(sh) + ccs + record), (True, ccs + record)]
        session = TlsSession(KeyLog(RFC8448_KEYLOG))
        events = feed(session, chunks)
        assert session.description.decryption == status and not of(events, TlsNoKeys)
        assert session.counts().encrypted == 90
        assert_accounted(session, chunks)


def test_an_over_long_handshake_message_is_reported() -> None:
    huge = b"\x0b" + (MAX_HANDSHAKE_MESSAGE + 1).to_bytes(3, "big") + bytes(100)
    chunks: Chunks = [(True, bytes.fromhex(RFC8448_CLIENT_HELLO)), (False, rfc8448_chunks()[1][1][:95]),
                      (False, bytes([22, 3, 3]) + len(huge).to_bytes(2, "big") + huge)]
    session = TlsSession(KeyLog(RFC8448_KEYLOG))
    events = feed(session, chunks)
    assert [e.reason for e in of(events, TlsMalformed)] == [
        f"handshake message type 11 of {MAX_HANDSHAKE_MESSAGE + 1} bytes over the limit {MAX_HANDSHAKE_MESSAGE}"]
    assert_accounted(session, chunks)


def test_a_client_hello_cut_by_the_end_of_the_capture() -> None:
    session = TlsSession(KeyLog())
    assert feed(session, [(True, bytes.fromhex(RFC8448_CLIENT_HELLO)[:40])]) == []
    (malformed,) = session.finish(2.0)
    assert isinstance(malformed, TlsMalformed)
    assert malformed.reason == "truncated record (40 bytes at the end of the stream)"
    assert session.description.decryption == "pending" and session.counts().malformed == 40


def test_an_unparsable_client_hello_is_reported() -> None:
    body = b"\x03\x03" + bytes(10)
    record = bytes([22, 3, 1]) + (len(body) + 4).to_bytes(2, "big") + b"\x01" + len(body).to_bytes(3, "big") + body
    session = TlsSession(KeyLog())
    events = feed(session, [(True, record)])
    assert [type(e).__name__ for e in events] == ["TlsHandshakeMessage", "TlsMalformed"]
    assert messages(events) == [(True, "client_hello", False)] and session.description.client_random is None


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=255)),
                min_size=1, max_size=4), st.sampled_from([[1, 7, 300], [5000], [100000]]))
def test_damaged_bytes_anywhere_are_data(damage: list[tuple[int, int]], pieces: list[int]) -> None:
    chunks = rfc8448_chunks()
    flat = [bytearray(d) for _, d in chunks]
    total = sum(len(d) for d in flat)
    for where, xor in damage:
        pos = where % total
        for d in flat:
            if pos < len(d):
                d[pos] ^= xor
                break
            pos -= len(d)
    damaged = [(side, bytes(d)) for (side, _), d in zip(chunks, flat, strict=True)]
    session = TlsSession(KeyLog(RFC8448_KEYLOG))
    feed(session, damaged, pieces=pieces)
    session.finish(1e9)
    assert_accounted(session, damaged)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.booleans(), st.binary(min_size=1, max_size=300)), min_size=1, max_size=8))
def test_random_bytes_are_data(chunks: Chunks) -> None:
    session = TlsSession(KeyLog(RFC8448_KEYLOG))
    feed(session, [(True, bytes.fromhex(RFC8448_CLIENT_HELLO))] + chunks)
    session.finish(1e9)
    assert_accounted(session, [(True, bytes.fromhex(RFC8448_CLIENT_HELLO))] + chunks)
