"""Real TLS traffic made in memory for the TLS tests (inspector/tls_*.py), and the checks that it is what
each scenario asks for.

The harness is ``pcaps/capture_kit/tls_memory.py`` (``bench/tls_twin.py`` makes the TLS twins of plaintext
captures with it): a client and a server ``SSLObject`` on memory BIOs, the client writing the NSS key log, a
throwaway CA's certificates. Python cannot choose TLS 1.3 cipher suites (no ``set_ciphersuites``): OpenSSL's
default order makes TLS_AES_256_GCM_SHA384 the one negotiated in process. The other two are negotiated in a
child Python whose OpenSSL reads ``OPENSSL_CONF`` (a ``Ciphersuites`` line in the system_default section) at
start-up: :func:`converse_with_suite`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.tls.handshake import parse_client_hello
from pcaps.capture_kit.tls_memory import Capture, Pki, contexts, converse, make_pki

REPO = Path(__file__).resolve().parents[3]


_CHILD = """
import json, sys
from pathlib import Path
from pcaps.capture_kit.tls_memory import Pki, contexts, converse
from cryptography import x509
d = Path(sys.argv[1])
pem = lambda n: x509.load_pem_x509_certificate((d / n).read_bytes())
pki = Pki(d, pem("ca.pem"), pem("server.pem"), pem("client.pem"))
c = converse(*contexts(pki, client_cert=sys.argv[3] == "1"), Path(sys.argv[2]))
print(json.dumps({"chunks": [[s, b.hex()] for s, b in c.chunks], "version": c.version, "cipher": c.cipher,
                  "sent": {str(k): v.hex() for k, v in c.sent.items()}}))
"""


def converse_with_suite(pki: Pki, suite: str, directory: Path, *, client_cert: bool = False) -> Capture:
    """A default conversation negotiating the TLS 1.3 suite ``suite``, in a child Python whose OpenSSL
    reads an OPENSSL_CONF that restricts its Ciphersuites."""
    conf = directory / f"openssl-{suite}.cnf"
    conf.write_text("openssl_conf = openssl_init\n[openssl_init]\nssl_conf = ssl_sect\n[ssl_sect]\n"
                    "system_default = system_default_sect\n[system_default_sect]\n"
                    f"Ciphersuites = {suite}\n")
    keylog = directory / f"keylog-{suite}.txt"
    env = dict(os.environ, OPENSSL_CONF=str(conf))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(pki.directory), str(keylog), "1" if client_cert else "0"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    return Capture([(bool(s), bytes.fromhex(h)) for s, h in out["chunks"]], keylog.read_text(), out["version"],
                   out["cipher"], {k == "True": bytes.fromhex(v) for k, v in out["sent"].items()})


# -- the harness makes what each scenario asks for ---------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_default_conversation_is_tls13_aes256(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki), tmp_path / "keylog.txt")
    assert (capture.version, capture.cipher) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert "CLIENT_TRAFFIC_SECRET_0" in capture.keylog and capture.sent[True].endswith(bytes(range(256)))
    assert capture.chunks[0][0] is True and capture.chunks[0][1][:1] == b"\x16"


# converse_with_suite's choice of suite is checked where its traffic is decrypted (test_tls_session.py)


def test_tls12_cipher_strings_and_encrypt_then_mac_switch(pki: Pki, tmp_path: Path) -> None:
    with_etm = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA"), tmp_path / "a.txt")
    without = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA", etm=False), tmp_path / "b.txt")
    assert (with_etm.version, with_etm.cipher) == ("TLSv1.2", "ECDHE-RSA-AES128-SHA")
    hellos = [parse_client_hello(c.chunks[0][1][9:]) for c in (with_etm, without)]
    assert [h.encrypt_then_mac for h in hellos] == [True, False]
    assert with_etm.keylog.splitlines()[-1].startswith("CLIENT_RANDOM ")


def test_hello_retry_request_is_made(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, hrr=True), tmp_path / "keylog.txt")
    server_first = next(data for side, data in capture.chunks if not side)
    assert bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c") in server_first
