"""Real clients authenticating to a real broker (``pcaps/tansu-sasl-scram.pcap``, made by
``pcaps/make_captures.py --only tansu-sasl-scram``): who each connection claimed to be and how it ended, the
legacy SaslHandshake v0 tokens, and no secret of the capture in any output of ``read``, ``show -v`` or the tap."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.tap.decode import TapDecoder
from tests.capture_secrets import SASL_CAPTURE, assert_no_secret, capture_secrets
from tests.inspector.tap.test_tap import _args, read_options


@pytest.fixture(scope="module")
def secrets() -> dict[str, bytes]:
    found = capture_secrets()
    assert len(found) >= 4 * 20  # the passwords, proofs, signatures, salts, salted password, token signature
    return found


@pytest.fixture(scope="module")
def read_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sasl")
    assert main(["read", str(SASL_CAPTURE), "--output", str(out / "parquet"), "--quiet"]) == ExitCode.OK
    assert main(["read", str(SASL_CAPTURE), "--output", str(out / "jsonl"), "--format", "jsonl",
                 "--quiet"]) == ExitCode.OK
    return out


def _connections(read_out: Path) -> list[dict[str, Any]]:
    return pq.read_table(read_out / "parquet" / "connections.parquet").to_pylist()


def test_who_each_connection_claimed_to_be_and_how_it_ended(read_out: Path) -> None:
    conns = [c for c in _connections(read_out) if c["sasl_mechanism"] is not None]
    claimed = Counter((c["sasl_claimed"], c["sasl_mechanism"], c["sasl_outcome"]) for c in conns)
    users = {who for who, _, _ in claimed if who is not None}
    # kafka-python (alice, bob, carol over the legacy exchange, heidi's JWT), aiokafka (erin), confluent-kafka
    # (frank), kafkajs (grace); dave's PLAIN is refused at the handshake, before any token names him.
    assert users == {f"User:{u}" for u in ("alice", "bob", "carol", "erin", "frank", "grace", "heidi")}
    for (who, mechanism, outcome), _ in claimed.items():
        if mechanism.startswith("SCRAM"):  # no user exists: Tansu ends each SCRAM exchange with e=unknown-user
            assert outcome in ("failed: SCRAM unknown-user", "in progress"), (who, outcome)
        elif mechanism == "OAUTHBEARER":
            assert who == "User:heidi" and outcome == "failed: SASL_AUTHENTICATION_FAILED (58)"
        else:
            assert (mechanism, who, outcome) == ("PLAIN", None, "in progress")  # Tansu closes: no answer
    issuers = {(c["sasl_mechanism"], c["sasl_issuer"]) for c in conns if c["sasl_issuer"] is not None}
    assert issuers == {("OAUTHBEARER", "https://issuer.invalid/realms/capture")}
    assert {c["principal"] for c in conns} == {None}  # nobody authenticated
    assert {c["sasl_session_lifetime_ms"] for c in conns} == {None}  # Tansu sends 60000 with its SCRAM failures
    events = pq.read_table(read_out / "parquet" / "events").to_pylist()
    assert {e["principal"] for e in events} == {None}


def test_legacy_tokens_are_events_and_everything_decodes(read_out: Path) -> None:
    events = pq.read_table(read_out / "parquet" / "events").to_pylist()
    tokens = [e for e in events if e["api_name"] == "SaslToken"]
    assert tokens and len(tokens) % 4 == 0  # carol's SCRAM rounds: client-first .. server-final, per attempt
    assert {e["client_id"] for e in tokens} == {"kafka-python-carol"}
    assert {e["api_key"] for e in tokens} == {None} and {e["decode_status"] for e in tokens} == {"ok"}
    messages = Counter(json.loads(e["body"])["AuthBytesDecoded"]["message"] for e in tokens)
    assert len(set(messages.values())) == 1 and set(messages) == {"client-first", "server-first", "client-final",
                                                                  "server-final"}
    assert {e["decode_status"] for e in events} == {"ok"}
    conns = _connections(read_out)
    assert sum(c["bytes_undecodable"] for c in conns) == 0 and sum(c["decode_failures"] for c in conns) == 0


def test_no_secret_in_read_outputs(read_out: Path, secrets: dict[str, bytes]) -> None:
    for name in ("events", "connections.parquet"):
        rows = pq.read_table(read_out / "parquet" / name).to_pylist()
        assert_no_secret(json.dumps(rows, default=str), name, secrets)
    for path in sorted((read_out / "jsonl").rglob("*")):
        if path.is_file():
            assert_no_secret(path.read_bytes(), path.name, secrets)
    assert_no_secret((read_out / "parquet" / "summary.json").read_bytes(), "summary.json", secrets)


def test_no_secret_in_show(secrets: dict[str, bytes], capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["show", str(SASL_CAPTURE)], ["show", str(SASL_CAPTURE), "-v"]):
        assert main(argv) == ExitCode.OK
        out = capsys.readouterr()
        assert "SaslToken" in out.out
        assert_no_secret(out.out + out.err, " ".join(argv[:1] + argv[2:]), secrets)


def test_no_secret_in_the_taps_rows(secrets: dict[str, bytes]) -> None:
    decoder = TapDecoder(read_options(_args("-i", "lo", "-o", "out")), "tap:lo")
    decoder.feed(SASL_CAPTURE.read_bytes())
    decoder.end_stream()
    decoder.finish(decoder.stream_ts)
    batch = decoder.take()
    assert batch is not None and batch.num_rows > 100
    assert_no_secret(json.dumps(batch.to_pylist(), default=str), "tap rows", secrets)
    assert_no_secret(json.dumps(decoder.summary.connections, default=str), "tap connections", secrets)
