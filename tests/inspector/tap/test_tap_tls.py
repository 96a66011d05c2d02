"""``kafka-inspector tap --tls-keylog``, live on ``lo``: a Kafka client over TLS writes its key log as it connects
(the file does not exist when the tap starts), the tap reads what was appended before it decodes more packets,
and its rows are the decrypted Kafka messages, marked ``tls``. The broker is a small TLS server answering
ApiVersions v0 (Python's ssl, the throwaway CA of pcaps/capture_kit/tls_memory.py). Needs root and tcpdump."""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pcaps.capture_kit.tls_memory import SERVER_NAME, Pki, make_pki
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame
from tests.inspector.tap.test_tap import HOST, _kill, _start_tap, _wait_text, free_port_here

pytestmark = pytest.mark.skipif(shutil.which("tcpdump") is None or not hasattr(socket, "AF_PACKET")
                                or __import__("os").geteuid() != 0, reason="needs root and tcpdump")


def _recv_exact(s: ssl.SSLSocket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


@pytest.fixture
def tls_broker(tmp_path: Path) -> Iterator[tuple[int, Pki]]:
    """A TLS server on 127.0.0.1 that answers each ApiVersions v0 request with the same correlation id."""
    pki = make_pki(tmp_path / "pki")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.server)
    port = free_port_here()
    listener = socket.create_server((HOST, port))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with ctx.wrap_socket(conn, server_side=True) as s:
            try:
                while True:
                    (size,) = struct.unpack(">i", _recv_exact(s, 4))
                    corr = struct.unpack(">i", _recv_exact(s, size)[4:8])[0]
                    s.sendall(frame(api_versions_response_v0(corr, [(18, 0, 3)])))
            except (EOFError, OSError):
                pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield port, pki
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _client(port: int, pki: Pki, keylog: Path, first: int, count: int) -> None:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(pki.ca)
    ctx.keylog_filename = str(keylog)
    with socket.create_connection((HOST, port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=SERVER_NAME) as s:
        for corr in range(first, first + count):
            s.sendall(frame(api_versions_request_v0(corr)))
            (size,) = struct.unpack(">i", _recv_exact(s, 4))
            _recv_exact(s, size)


def test_the_tap_decrypts_with_a_key_log_that_grows(tls_broker: tuple[int, Pki], tmp_path: Path) -> None:
    port, pki = tls_broker
    keylog, out, log = tmp_path / "keys.log", tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(port, out, log, "--tls-keylog", str(keylog))
    try:
        _wait_text(log, "listening on", tap)
        assert not keylog.exists()  # written by the client as it connects
        _client(port, pki, keylog, 1, 3)
        _client(port, pki, keylog, 10, 2)  # a second connection: more lines appended
        _kill(tap)  # SIGTERM: the tap drains tcpdump and writes everything
    finally:
        _kill(tap)
    events = pq.read_table(out / "events").to_pylist()
    got = sorted((e["correlation_id"], e["direction"]) for e in events)
    assert got == sorted((c, d) for c in (1, 2, 3, 10, 11) for d in ("request", "response")), log.read_text()
    assert all(e["tls"] and e["api_name"] == "ApiVersions" and e["decode_status"] == "ok" for e in events)
    rows = pq.read_table(out / "connections.parquet").to_pylist()
    assert [r["tls_decryption"] for r in rows] == ["decrypted", "decrypted"]
    assert all(r["tls_sni"] == SERVER_NAME and r["bytes_encrypted"] == r["bytes_undecodable"] == 0 for r in rows)
