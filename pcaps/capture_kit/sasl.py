"""The client parts of the SASL capture: real clients authenticating to Tansu run with ``--authentication``.

Tansu 0.6.0 offers SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (PLAIN is refused at the handshake). Its users
are made with ``tansu user create`` (AlterUserScramCredentials), which an authenticating broker refuses with
NOT_AUTHENTICATED before anyone is authenticated, and its storage is in memory: so no user exists, and every
exchange ends in failure (SCRAM: a server-final ``e=unknown-user``, with ErrorCode 0). The credentials are on
the wire all the same: the salted password of the AlterUserScramCredentials request, the SCRAM proofs, the
OAUTHBEARER token. The passwords below are throwaway ones made for this capture; the tests check that none of
them, nor any secret taken from the capture's bytes, appears in any output.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
from typing import Any

from pcaps.capture_kit.big import KAFKAJS, kafkajs_ready
from pcaps.capture_kit.infra import Run, tansu_binary

#: user -> password, one user per client library (throwaway, made for this capture).
PASSWORDS = {
    "alice": "alice-Kp-256-pw!",
    "bob": "bob-Kp-512-pw#",
    "carol": "carol-legacy-v0-pw",
    "dave": "dave-plain-pw%",
    "erin": "erin-aio-512-pw&",
    "frank": "frank-rdkafka-pw*",
    "grace": "grace-kafkajs-pw+",
    "admin": "admin-tansu-cli-pw=",
}
#: The OAUTHBEARER token's signing key (HS256; the token is the secret on the wire, its signature redacted).
OAUTH_KEY = b"throwaway-oauth-signing-key"
OAUTH_CLAIMS = {"sub": "heidi", "iss": "https://issuer.invalid/realms/capture", "scope": "kafka"}


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    head = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = part(json.dumps(claims).encode())
    signature = hmac.new(OAUTH_KEY, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{part(signature)}"


def oauth_token() -> str:
    """The OAUTHBEARER token the capture's client sends."""
    return _jwt(OAUTH_CLAIMS)


def _kp_attempt(bs: str, mechanism: str, user: str, **extra: Any) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bs, client_id=f"kafka-python-{user}",
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_plain_username=user,
                             sasl_plain_password=PASSWORDS.get(user),
                             request_timeout_ms=3000, bootstrap_timeout_ms=4000, reconnect_backoff_max_ms=1000,
                             **extra)
    try:
        admin.create_topics([])
    finally:
        admin.close()


def sasl_tansu_cli(run: Run, bs: str) -> None:
    with run.step("tansu user create admin (AlterUserScramCredentials: salted password on the wire)"):
        done = subprocess.run([tansu_binary(), "user", "create", "--broker", f"tcp://{bs}", "--mechanism", "scram256",
                               "admin", PASSWORDS["admin"]], capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")


def sasl_kafka_python(run: Run, bs: str) -> None:
    with run.step("kafka-python SCRAM-SHA-256 (alice)"):
        _kp_attempt(bs, "SCRAM-SHA-256", "alice")
    with run.step("kafka-python SCRAM-SHA-512 (bob)"):
        _kp_attempt(bs, "SCRAM-SHA-512", "bob")
    with run.step("kafka-python api_version=(0, 10, 1): SaslHandshake v0, legacy SCRAM-SHA-256 tokens (carol)"):
        _kp_attempt(bs, "SCRAM-SHA-256", "carol", api_version=(0, 10, 1))
    with run.step("kafka-python PLAIN (dave): Tansu refuses the mechanism"):
        _kp_attempt(bs, "PLAIN", "dave")
    with run.step("kafka-python OAUTHBEARER (a JWT for heidi)"):
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Provider(AbstractTokenProvider):  # type: ignore[misc]
            def token(self) -> str:
                return oauth_token()

        _kp_attempt(bs, "OAUTHBEARER", "heidi", sasl_oauth_token_provider=Provider())


def sasl_aiokafka(run: Run, bs: str) -> None:
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def attempt() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bs, client_id="aiokafka-erin", security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="erin",
                                    sasl_plain_password=PASSWORDS["erin"], request_timeout_ms=3000)
        try:
            await asyncio.wait_for(admin.start(), 10)
        finally:
            await admin.close()

    with run.step("aiokafka SCRAM-SHA-512 (erin)"):
        asyncio.run(attempt())


def sasl_confluent(run: Run, bs: str) -> None:
    from confluent_kafka.admin import AdminClient

    with run.step("confluent-kafka SCRAM-SHA-256 (frank)"):
        admin = AdminClient({"bootstrap.servers": bs, "client.id": "confluent-frank",
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                             "sasl.username": "frank", "sasl.password": PASSWORDS["frank"],
                             "reconnect.backoff.ms": 500, "reconnect.backoff.max.ms": 1000, "log_level": 0})
        topics = admin.list_topics(timeout=4)
        raise RuntimeError(f"unexpectedly authenticated: {sorted(topics.topics)}")


def sasl_kafkajs(run: Run, bs: str) -> None:
    with run.step("kafkajs SCRAM-SHA-256 (grace)"):
        kafkajs_ready()
        done = subprocess.run(["node", str(KAFKAJS / "sasl.js"), bs, "scram-sha-256", "grace", PASSWORDS["grace"]],
                              cwd=KAFKAJS, capture_output=True, text=True, timeout=60)
        if done.returncode:
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
