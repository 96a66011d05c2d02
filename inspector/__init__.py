"""Captures to events: packets, TCP reassembly, Kafka framing and correlation, writers, CLI."""

from inspector import _compiled

_compiled.install("inspector", _compiled.PACKAGE)
