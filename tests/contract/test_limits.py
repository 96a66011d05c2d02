"""The decode limits: one value, its defaults written once, taken whole by every command."""

from __future__ import annotations

import dataclasses

import pytest

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from decoders.element_budget import MAX_ELEMENTS
from decoders.record_budget import MAX_DECOMPRESSED_DEFAULT, MAX_RECORDS_DEFAULT
from inspector.cli.main import build_parser
from inspector.kafka.pipeline import MAX_HELD, Inspector
from inspector.read.decode_options import read_options


def test_the_decoders_and_the_inspector_default_to_the_one_value() -> None:
    assert (MAX_ELEMENTS, MAX_DECOMPRESSED_DEFAULT, MAX_RECORDS_DEFAULT, MAX_HELD) == (
        DEFAULT_LIMITS.max_elements, DEFAULT_LIMITS.max_decompressed, DEFAULT_LIMITS.max_records,
        DEFAULT_LIMITS.max_held)
    inspector = Inspector()
    assert inspector.limits is DEFAULT_LIMITS
    assert inspector.reassembler.max_buffered_per_direction == DEFAULT_LIMITS.max_buffered
    assert inspector.reassembler.max_connections == DEFAULT_LIMITS.max_connections


@pytest.mark.parametrize("argv", [["read", "x.pcap", "-o", "o"], ["show", "x.pcap"], ["clients", "x.pcap"],
                                  ["tap", "-i", "lo", "-o", "o"]])
def test_the_flags_default_to_it_and_make_it_whole(argv: list[str]) -> None:
    parser = build_parser()
    assert read_options(parser.parse_args(argv)).limits == DEFAULT_LIMITS
    given = read_options(parser.parse_args([*argv, "--max-frame", "1MB", "--max-buffered", "2MB",
                                            "--max-connections", "3", "--max-pending", "4", "--max-held", "5MB",
                                            "--max-elements", "6", "--max-decompressed", "7MB"])).limits
    assert given == dataclasses.replace(DEFAULT_LIMITS, max_frame=1 << 20, max_buffered=2 << 20, max_connections=3,
                                        max_pending=4, max_held=5 << 20, max_elements=6, max_decompressed=7 << 20)


def test_a_limit_out_of_range_is_refused_by_name() -> None:
    for name in (f.name for f in dataclasses.fields(DecodeLimits)):
        with pytest.raises(ValueError, match=f"^{name} must be >= "):
            DecodeLimits(**{name: -1})
    with pytest.raises(ValueError, match="max_connections must be >= 1"):
        DecodeLimits(max_connections=0)
    assert DecodeLimits(max_elements=0).max_elements == 0
