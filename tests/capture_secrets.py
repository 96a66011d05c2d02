"""The secrets of ``pcaps/tansu-sasl-scram.pcap``, in every encoding an output could hold them in.

Found in the capture's own bytes, independently of the redaction under test: the passwords the capture was made
with (``pcaps/capture_kit/sasl.py``), every SCRAM proof, salt and server signature in any frame, the OAUTHBEARER
token's signature, and the Salt and SaltedPassword of the AlterUserScramCredentials request (decoded without the
redaction step). Each becomes its raw text or bytes, hex, base64 and JSON-escaped forms.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from decoders import decode_request
from pcaps.capture_kit.sasl import PASSWORDS
from tests.decoders.test_properties_captures import split_frames, tcp_flows

SASL_CAPTURE = Path(__file__).resolve().parents[1] / "pcaps" / "tansu-sasl-scram.pcap"

_SCRAM = re.compile(rb"(?:^|,)([psv])=([A-Za-z0-9+/=]{8,})")
_BEARER = re.compile(rb"auth=Bearer ([A-Za-z0-9_\-]+)\.([A-Za-z0-9_\-]+)\.([A-Za-z0-9_\-]+)")


def _raw_secrets(path: Path) -> set[bytes]:
    flows = tcp_flows(path)
    broker_port = Counter(port for key in flows for port in (key[1], key[3])).most_common(1)[0][0]
    found = {p.encode() for p in PASSWORDS.values()}
    for (_, _, _, dport), (data, _) in flows.items():
        for _, frame in split_frames(data):
            for _, value in _SCRAM.findall(frame):
                found.add(value)
                try:
                    found.add(base64.b64decode(value, validate=True))
                except binascii.Error:
                    pass
            for _, _, signature in _BEARER.findall(frame):
                found.add(signature)
            if dport == broker_port and frame[:2] == b"\x00\x33":  # AlterUserScramCredentials
                body = decode_request(frame, postprocess=False).body or {}
                for upsertion in body.get("Upsertions") or ():
                    found.update((upsertion["Salt"], upsertion["SaltedPassword"]))
    return {s for s in found if len(s) >= 8}


def capture_secrets(path: Path = SASL_CAPTURE) -> dict[str, bytes]:
    """Each secret of the capture in each of its forms (:func:`secret_forms`)."""
    return secret_forms(_raw_secrets(path))


def secret_forms(secrets: Iterable[bytes]) -> dict[str, bytes]:
    """Each secret's forms (raw, hex, base64, JSON-escaped), named for the failure message."""
    forms: dict[str, bytes] = {}
    for secret in secrets:
        forms[f"raw {secret!r}"] = secret
        forms[f"hex {secret!r}"] = secret.hex().encode()
        forms[f"base64 {secret!r}"] = base64.b64encode(secret)
        forms[f"json {secret!r}"] = json.dumps(secret.decode("latin-1"))[1:-1].encode()
    return forms


def assert_no_secret(text: str | bytes, what: str, secrets: dict[str, bytes]) -> None:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    leaked = [name for name, form in secrets.items() if form in data]
    assert not leaked, f"{what}: {leaked[:5]}"
