"""Stream bytes in, Kafka messages out: framing, a connection's roles and correlation, SASL, the names of topic
ids, a TLS connection's plaintext, and the pipeline that routes each segment (reassembly, TLS or not, framers)."""
