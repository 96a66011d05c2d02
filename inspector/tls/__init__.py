"""TLS seen on a connection: sniffing, the record layer, handshake, key log, keys, ciphers and a session's events."""
