"""Segments in, stream bytes out: TCP reassembly, its per-connection state and its events (gaps, ignored segments)."""
