"""Captures to events: packets, TCP reassembly, Kafka framing and correlation, writers, CLI."""
