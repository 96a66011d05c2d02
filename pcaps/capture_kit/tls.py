"""Kafka over real TLS: a throwaway PKI, stunnel4 in front of Tansu, the clients' SSL contexts and key logs.

Tansu 0.6.0's own TLS does not work (``--cert`` and ``--key`` are refused together, and a combined PEM on a
``tls://`` listener never finished a handshake), so Debian's stunnel4 (OpenSSL) terminates TLS on one port and
forwards the plaintext to Tansu's port; Tansu advertises the TLS address, so clients reconnect through stunnel
after Metadata. tcpdump records the TLS port (the clients' side of stunnel) into ``NAME.pcap``, and a second
tcpdump the plaintext hop (stunnel to Tansu) into its twin ``NAME.plaintext.pcap``: stunnel forwards the decrypted
bytes as they are, so the twin holds the same Kafka messages in plaintext, what decrypting ``NAME.pcap`` must give.

Every client writes an NSS key log (``SSLKEYLOGFILE`` format) beside the capture, ``NAME.keylog``: Python's
``SSLContext.keylog_filename`` (kafka-python, aiokafka), Node's ``'keylog'`` event on each TLS socket (kafkajs,
through a socket factory), and the ``SSLKEYLOGFILE`` variable for librdkafka (confluent-kafka), whose bundled
OpenSSL 3.5 honours it. The PKI (a CA, a server certificate for 127.0.0.1/localhost and a client certificate
``CN=alice,OU=payments,O=acme``) is made with ``cryptography`` on first use and kept beside the captures: test
fixtures, not the secrets of anything real.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import ssl
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcaps.capture_kit.infra import HERE, HOST, kill_group, log, tshark_summary, wait_port

#: The parent sets it to the folder of the TLS captures (``OUTDIR/tls``); the client parts (child processes)
#: find the PKI and the key log there.
TLS_DIR_ENV = "CAPTURE_TLS_DIR"

#: The client certificate's subject (RFC 4514 order, as Kafka's ``ssl.principal.mapping.rules`` see it).
CLIENT_SUBJECT = "CN=alice,OU=payments,O=acme"


def tls_dir() -> Path:
    """Where the TLS captures, their key logs and the PKI live (``pcaps/tls`` unless ``--outdir`` moved it)."""
    return Path(os.environ.get(TLS_DIR_ENV, str(HERE / "tls")))


def plaintext_twin(pcap: Path) -> Path:
    """The plaintext twin of TLS capture ``pcap`` (``NAME.pcap`` -> ``NAME.plaintext.pcap``, beside it): the hop
    from stunnel to Tansu, recorded at the same time."""
    return pcap.with_name(f"{pcap.stem}.plaintext.pcap")


def keylog_path(name: str) -> Path:
    """The NSS key log of capture ``name``: beside it, same base name, ``.keylog``."""
    return tls_dir() / f"{name}.keylog"


# --------------------------------------------------------------------------------------------
# the throwaway PKI
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.folder / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.folder / "server.key"

    @property
    def client_cert(self) -> Path:
        return self.folder / "client-alice.pem"

    @property
    def client_key(self) -> Path:
        return self.folder / "client-alice.key"

    def files(self) -> list[Path]:
        return [self.ca, self.ca_key, self.server_cert, self.server_key, self.client_cert, self.client_key]


def pki() -> Pki:
    return Pki(tls_dir() / "pki")


def ensure_pki(folder: Path) -> Pki:
    """The PKI in ``folder``, made there if any file is missing (delete the folder to make a new one)."""
    p = Pki(folder)
    if all(f.exists() for f in p.files()):
        return p
    folder.mkdir(parents=True, exist_ok=True)
    _make_pki(p)
    log(f"made a throwaway PKI in {folder.name}/: CA, server (127.0.0.1, localhost), client {CLIENT_SUBJECT}")
    return p


def _make_pki(p: Pki) -> None:
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    not_before, not_after = now - datetime.timedelta(days=1), now + datetime.timedelta(days=3650)

    def name(*parts: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
        return x509.Name([x509.NameAttribute(oid, value) for oid, value in parts])

    def write_key(path: Path, key: Any) -> None:
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = name((NameOID.ORGANIZATION_NAME, "kafka-inspector captures"),
                   (NameOID.COMMON_NAME, "kafka-inspector throwaway test CA"))
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(subject: x509.Name, key: Any, usage: x509.ObjectIdentifier,
             san: list[x509.GeneralName] | None) -> x509.Certificate:
        b = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=isinstance(key, rsa.RSAPrivateKey), data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        )
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(ca_key, hashes.SHA256())

    # RSA server key: the TLS 1.2 captures use ECDHE-RSA suites
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server = leaf(name((NameOID.ORGANIZATION_NAME, "kafka-inspector captures"), (NameOID.COMMON_NAME, "localhost")),
                  server_key, ExtendedKeyUsageOID.SERVER_AUTH,
                  [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(HOST))])
    # ECDSA P-256 client key: the mutual-TLS capture's CertificateVerify is an ECDSA signature
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = leaf(name((NameOID.ORGANIZATION_NAME, "acme"), (NameOID.ORGANIZATIONAL_UNIT_NAME, "payments"),
                       (NameOID.COMMON_NAME, "alice")), client_key, ExtendedKeyUsageOID.CLIENT_AUTH, None)
    assert client.subject.rfc4514_string() == CLIENT_SUBJECT, client.subject.rfc4514_string()

    pem = serialization.Encoding.PEM
    p.ca.write_bytes(ca.public_bytes(pem))
    write_key(p.ca_key, ca_key)
    p.server_cert.write_bytes(server.public_bytes(pem))
    write_key(p.server_key, server_key)
    p.client_cert.write_bytes(client.public_bytes(pem))
    write_key(p.client_key, client_key)


# --------------------------------------------------------------------------------------------
# the TLS listener: stunnel4 in front of Tansu
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TlsListener:
    """How stunnel4 terminates TLS for a capture (the clients force the same version and suite)."""

    version: str  # "TLSv1.2" or "TLSv1.3": stunnel's sslVersionMin and sslVersionMax
    suite: str  # TLS 1.2: an OpenSSL cipher name (stunnel ``ciphers``); TLS 1.3: a ``ciphersuites`` name
    client_cert: bool = False  # mutual TLS: stunnel ``verify = 2`` against the throwaway CA

    @property
    def tls12(self) -> bool:
        return self.version == "TLSv1.2"


def stunnel_binary() -> str:
    found = shutil.which("stunnel4") or shutil.which("stunnel")
    if not found:
        raise RuntimeError("stunnel4 is not installed (Debian: apt-get install -y stunnel4)")
    return found


@contextlib.contextmanager
def stunnel(tls_port: int, backend_port: int, listener: TlsListener, p: Pki, workfile: Path) -> Iterator[str]:
    """stunnel4 accepting TLS on 127.0.0.1:tls_port and forwarding to 127.0.0.1:backend_port; yields the TLS
    bootstrap. Its configuration and log are ``workfile`` + ``.conf``/``.log`` (removed after)."""
    conf, logfile = workfile.with_name(workfile.name + ".conf"), workfile.with_name(workfile.name + ".log")
    lines = [
        "foreground = yes",
        "pid =",
        "syslog = no",
        f"output = {logfile}",
        "debug = notice",
        "[kafka-tls]",
        f"accept = {HOST}:{tls_port}",
        f"connect = {HOST}:{backend_port}",
        f"cert = {p.server_cert}",
        f"key = {p.server_key}",
        f"sslVersionMin = {listener.version}",
        f"sslVersionMax = {listener.version}",
        f"ciphers = {listener.suite}" if listener.tls12 else f"ciphersuites = {listener.suite}",
    ]
    if listener.client_cert:
        lines += [f"CAfile = {p.ca}", "verify = 2"]
    conf.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen([stunnel_binary(), str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_port(tls_port)
        log(f"stunnel up on {HOST}:{tls_port} ({listener.version} {listener.suite}"
            f"{', client certificate required' if listener.client_cert else ''}) -> {HOST}:{backend_port}")
        yield f"{HOST}:{tls_port}"
    finally:
        kill_group(proc)
        tail = logfile.read_text(errors="replace").strip().splitlines()[-3:] if logfile.exists() else []
        log(f"stunnel on port {tls_port} stopped{': ' + ' / '.join(tail) if tail else ''}")
        conf.unlink(missing_ok=True)
        logfile.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# the clients' side
# --------------------------------------------------------------------------------------------


def client_context(listener: TlsListener, keylog: Path | None, client_cert: bool | None = None) -> ssl.SSLContext:
    """A Python SSL context verifying the throwaway CA (and 127.0.0.1), pinned to ``listener``'s version (and
    TLS 1.2 suite), writing its secrets to ``keylog``; with the client certificate when ``client_cert``."""
    p = pki()
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(p.ca))
    version = ssl.TLSVersion.TLSv1_2 if listener.tls12 else ssl.TLSVersion.TLSv1_3
    ctx.minimum_version = version
    ctx.maximum_version = version
    if listener.tls12:
        ctx.set_ciphers(listener.suite)
    if listener.client_cert if client_cert is None else client_cert:
        ctx.load_cert_chain(str(p.client_cert), str(p.client_key))
    if keylog is not None:
        ctx.keylog_filename = str(keylog)
    return ctx


def confluent_tls_config(listener: TlsListener) -> dict[str, Any]:
    """librdkafka's settings for ``listener`` (``security.protocol`` is left to the caller)."""
    p = pki()
    conf: dict[str, Any] = {
        "ssl.ca.location": str(p.ca),
        "ssl.endpoint.identification.algorithm": "https",
    }
    if listener.tls12:
        conf["ssl.cipher.suites"] = listener.suite
    if listener.client_cert:
        conf["ssl.certificate.location"] = str(p.client_cert)
        conf["ssl.key.location"] = str(p.client_key)
    return conf


def tls_create_topics(bootstrap: str, topics: dict[str, int], listener: TlsListener) -> None:
    """CreateTopics through the TLS port before tcpdump starts (Tansu advertises only the TLS address)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "setup-admin", "security.protocol": "ssl",
                         **confluent_tls_config(listener)})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], request_timeout=10)
    for fut in futures.values():
        fut.result(timeout=15)


# --------------------------------------------------------------------------------------------
# tshark's view: the handshakes, and Kafka inside TLS decrypted with the key log
# --------------------------------------------------------------------------------------------


TLS_VERSIONS = {0x0301: "TLS 1.0", 0x0302: "TLS 1.1", 0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}
#: The suites the captures use, by their IANA names.
SUITES = {
    0x1301: "TLS_AES_128_GCM_SHA256",
    0x1302: "TLS_AES_256_GCM_SHA384",
    0x1303: "TLS_CHACHA20_POLY1305_SHA256",
    0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    0xCCA8: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

ALERTS = {0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 40: "handshake_failure",
          42: "bad_certificate", 48: "unknown_ca", 50: "decode_error", 51: "decrypt_error", 116: "certificate_required"}


def _tshark(args: list[str]) -> str:
    return subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=120).stdout


def tshark_tls_handshakes(path: Path, port: int) -> list[str]:
    """What tshark sees of the handshakes without any key: connections per negotiated version and suite."""
    cmd = ["tshark", "-r", str(path), "-d", f"tcp.port=={port},tls", "-Y", "tls.handshake.type == 2",
           "-T", "fields", "-E", "occurrence=l", "-e", "tls.handshake.version",
           "-e", "tls.handshake.extensions.supported_version", "-e", "tls.handshake.ciphersuite"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        certs = _tshark(["-r", str(path), "-d", f"tcp.port=={port},tls", "-Y",
                         f"tls.handshake.type == 11 && tcp.dstport == {port}"]).count("\n")
        alerts = _tshark(["-r", str(path), "-d", f"tcp.port=={port},tls", "-Y", "tls.alert_message", "-T", "fields",
                          "-e", "tcp.srcport", "-e", "tls.alert_message.desc"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"tshark unavailable: {exc}"]
    seen: Counter[str] = Counter()
    for line in out.splitlines():
        legacy, supported, suite = (line.split("\t") + ["", ""])[:3]
        version = int(supported or legacy or "0", 0)
        code = int(suite or "0", 0)
        seen[f"{TLS_VERSIONS.get(version, hex(version))} {SUITES.get(code, hex(code))}"] += 1
    lines = [f"ServerHello: {what} x{n}" for what, n in sorted(seen.items())]
    if certs:
        lines.append(f"client Certificate messages in the clear (TLS 1.2): {certs}")
    clear: Counter[str] = Counter()
    for line in alerts.splitlines():
        sport, desc = (line.split("\t") + [""])[:2]
        what = ALERTS.get(int(desc), f"alert {desc}") if desc.isdigit() else "encrypted alert"
        clear[f"{'server' if sport == str(port) else 'client'} {what}"] += 1
    if clear:
        lines.append("alerts seen without a key: " + ", ".join(f"{what} x{n}" for what, n in sorted(clear.items())))
    return lines


def tshark_tls_kafka(path: Path, keylog: Path, port: int) -> list[str]:
    """Kafka requests per API key/version that tshark dissects inside TLS once the key log decrypts it, after a
    line counting the Kafka PDUs (requests and responses) and the packets that carry them."""
    try:
        out = _tshark(["-r", str(path), "-o", f"tls.keylog_file:{keylog}", "-d", f"tcp.port=={port},tls",
                       "-d", f"tls.port=={port},kafka", "-Y", "kafka", "-T", "fields", "-e", "kafka.len"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"tshark unavailable: {exc}"]
    pdus = sum(len(line.split(",")) for line in out.splitlines() if line)
    return [f"{pdus} Kafka PDUs in {len(out.splitlines())} packets", *tshark_summary(path, [port], tls_keylog=keylog)]
