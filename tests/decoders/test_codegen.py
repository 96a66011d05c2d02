"""The generated decoders: straight-line code, up to date, precise failures."""

from __future__ import annotations

import struct

from decoders import decode_request, decode_response
from decoders.codegen.__main__ import main as codegen_main
from tests.decoders.plain_readers import plain_module, plain_source
from tests.frames import api_versions_response_v0, metadata_request_v0, request_header


def test_generated_code_is_up_to_date() -> None:
    assert codegen_main(["--check"]) == 0


def test_generated_functions_are_straight_line_with_precompiled_structs() -> None:
    api_003_metadata = plain_module("api_003_metadata")  # rendered as decoders/generated's are
    src = plain_source("api_003_metadata")
    assert "_struct.Struct('>" in src
    # No schema is consulted at run time: the module holds only code and constant tables.
    assert "schema" not in src.split("Do not edit.")[1]
    assert api_003_metadata.REQUEST[0] is api_003_metadata.REQUEST[0]
    # Identical wire formats share one function.
    assert len(set(api_003_metadata.REQUEST.values())) < len(api_003_metadata.REQUEST)


def test_truncation_names_field_path_and_offset() -> None:
    frame = metadata_request_v0(1, ["orders", "payments"])
    msg = decode_request(frame[:-3])
    assert msg.status.startswith("truncated")
    assert msg.error_path == "Topics[1].Name"
    assert msg.error_offset == len(frame) - len("payments")  # just after the second name's length prefix
    assert "Topics[1].Name" in msg.status and f"offset {msg.error_offset}" in msg.status


def test_huge_count_is_rejected_before_allocating() -> None:
    frame = request_header(3, 0, 1) + struct.pack(">i", 2**31 - 1)
    msg = decode_request(frame)
    assert msg.status.startswith("truncated: count 2147483647") and msg.error_path == "Topics"


def test_negative_length_is_invalid() -> None:
    frame = request_header(3, 0, 1) + struct.pack(">i", 1) + struct.pack(">h", -7)
    msg = decode_request(frame)
    assert "negative length -7" in msg.status and msg.error_path == "Topics[0].Name"


def test_trailing_bytes_keep_the_body() -> None:
    msg = decode_request(metadata_request_v0(1, ["a"]) + b"\x00\x01")
    assert msg.status.startswith("trailing bytes: 2") and msg.body == {"Topics": [{"Name": "a"}]}


def test_unknown_key_and_version_are_statuses() -> None:
    assert decode_request(struct.pack(">hhi", 500, 0, 1)).status == "unknown api key 500"
    msg = decode_request(request_header(3, 99, 1))
    assert msg.status == "unknown version 99 of Metadata (known 0-13)" and msg.client_id == "test-client"
    assert decode_response(b"\x00\x00", 3, 0).status.startswith("truncated")


def test_a_version_out_of_range_is_not_taken_for_another() -> None:
    """The exact decode finds its readers by ``api_key << 16 | version``: a version beyond 16 bits (or
    negative) must not land on a real one's entry."""
    frame = api_versions_response_v0(7, [(18, 0, 3)])
    assert decode_response(frame, 18, 0).ok
    for version in (1 << 16, -(1 << 16), -1):
        assert decode_response(frame, 18, version).status == f"unknown version {version} of ApiVersions (known 0-5)"
    assert decode_response(frame, 18 - 1, 1 << 16).status.startswith("unknown version")


def test_array_count_check_takes_a_null_struct_as_one_byte() -> None:
    """Found by hypothesis (kio round trip): a StreamsGroupDescribe v0 group whose nullable Topology is null
    takes 21 bytes; the count check once counted the whole Topology's minimum size and refused it."""
    frame = bytes.fromhex("00000000" "00" "00000000" "02" "ffff" "00" "01" "01" "00000000" "00000000" "ff" "01"
                          "80000000" "00" "00")
    msg = decode_response(frame, 89, 0)
    assert msg.status == "ok", msg.status
    assert msg.body is not None and msg.body["Groups"][0]["Topology"] is None
