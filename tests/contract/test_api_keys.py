"""The API keys: one generated enum, whose members are the names every package imports."""

from __future__ import annotations

import contract.kafka
from contract.apis import API_NAMES, ApiKey


def test_the_enum_is_every_api_of_the_specs() -> None:
    assert {int(k): k.name for k in ApiKey} == {key: contract_name(name) for key, name in API_NAMES.items()}
    assert ApiKey.JOIN_GROUP == 11 and ApiKey(3) is ApiKey.METADATA and ApiKey.OFFSET_FOR_LEADER_EPOCH == 23
    assert f"{ApiKey.PRODUCE}" == str(ApiKey.PRODUCE) == "0"  # written as its number, as before


def test_the_detectors_names_are_its_values() -> None:
    names = [n for n in dir(contract.kafka) if n in ApiKey.__members__]
    assert len(names) >= 20
    for name in names:
        value = getattr(contract.kafka, name)
        assert value == ApiKey[name] and type(value) is int  # a plain int: Spark takes it in a row


def contract_name(name: str) -> str:
    out = ""
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out += "_"
        out += c.upper()
    return out
