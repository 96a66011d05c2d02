"""The NSS key log (the SSLKEYLOGFILE format), sans-I/O: fed its text as it grows, looked up by client random.

Each line is ``LABEL <client_random hex> <secret hex>``. Used here: ``CLIENT_RANDOM`` (TLS 1.2's 48-byte
master secret) and TLS 1.3's ``CLIENT_HANDSHAKE_TRAFFIC_SECRET``, ``SERVER_HANDSHAKE_TRAFFIC_SECRET``,
``CLIENT_TRAFFIC_SECRET_0`` and ``SERVER_TRAFFIC_SECRET_0``. Other labels (``EXPORTER_SECRET``,
``CLIENT_EARLY_TRAFFIC_SECRET``, ``RSA``...), comments (``#``) and blank lines are ignored; a line that is
not three fields, or whose hex or lengths are wrong for its label, is skipped and counted as malformed.

The text is fed in pieces as a file that a live process appends to is read: a last line without its newline
waits for it (:meth:`KeyLog.finish` takes it when the file is known complete). A waiting line longer than
:data:`MAX_LINE` is dropped as malformed (with the rest of it, up to its newline), so memory stays bounded.
The log holds the secrets of many connections; a connection asks for its own with :meth:`KeyLog.lookup`,
lazily, each time it needs keys it does not have yet (keys may be written after the connection's first
records were seen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["LABELS", "MAX_LINE", "KeyLog", "Secrets"]

CLIENT_RANDOM: Final = "CLIENT_RANDOM"
CLIENT_HANDSHAKE: Final = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE: Final = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_TRAFFIC: Final = "CLIENT_TRAFFIC_SECRET_0"
SERVER_TRAFFIC: Final = "SERVER_TRAFFIC_SECRET_0"
LABELS: Final = frozenset({CLIENT_RANDOM, CLIENT_HANDSHAKE, SERVER_HANDSHAKE, CLIENT_TRAFFIC, SERVER_TRAFFIC})
MAX_LINE: Final = 1024  # a key log line is under 250 characters


@dataclass(frozen=True, slots=True)
class Secrets:
    """What the key log knows of one connection (by its client random), each None until its line is read:
    ``master_secret`` (TLS 1.2) and the four TLS 1.3 traffic secrets."""

    master_secret: bytes | None = None
    client_handshake: bytes | None = None
    server_handshake: bytes | None = None
    client_traffic: bytes | None = None
    server_traffic: bytes | None = None


_FIELD: Final = {
    CLIENT_RANDOM: "master_secret", CLIENT_HANDSHAKE: "client_handshake", SERVER_HANDSHAKE: "server_handshake",
    CLIENT_TRAFFIC: "client_traffic", SERVER_TRAFFIC: "server_traffic",
}


class KeyLog:
    """An NSS key log, fed its text incrementally. Counters: ``lines_used``, ``lines_ignored`` (other
    labels, comments, blank lines), ``lines_malformed``; ``generation`` grows with each line used (a
    connection that found no keys need not look again until it changes)."""

    __slots__ = ("_partial", "_secrets", "_skipping", "generation", "lines_ignored", "lines_malformed",
                 "lines_used")

    def __init__(self, text: str = "") -> None:
        self._partial = ""
        self._skipping = False  # inside an over-long line: drop up to its newline
        self._secrets: dict[bytes, dict[str, bytes]] = {}
        self.lines_used = 0
        self.lines_ignored = 0
        self.lines_malformed = 0
        self.generation = 0
        if text:
            self.feed(text)

    def __len__(self) -> int:
        """How many connections (client randoms) the log has secrets for."""
        return len(self._secrets)

    def feed(self, text: str) -> None:
        """The next piece of the key log's text (any split: a line may be cut anywhere)."""
        if not text:
            return
        lines = text.split("\n")
        lines[0] = self._partial + lines[0]
        self._partial = lines.pop()
        for line in lines:
            if self._skipping:
                self._skipping = False  # the rest of the over-long line, already counted
                continue
            self._line(line)
        if len(self._partial) > MAX_LINE:
            if not self._skipping:
                self.lines_malformed += 1
            self._partial = ""
            self._skipping = True

    def finish(self) -> None:
        """The text is complete: a last line without a newline is read."""
        partial, self._partial = self._partial, ""
        if partial and not self._skipping:
            self._line(partial)
        self._skipping = False

    def lookup(self, client_random: bytes) -> Secrets | None:
        """The secrets known for a connection, None when the log has none for it."""
        found = self._secrets.get(client_random)
        if found is None:
            return None
        return Secrets(**{_FIELD[label]: secret for label, secret in found.items()})

    def _line(self, line: str) -> None:
        line = line.strip()
        if not line or line.startswith("#"):
            self.lines_ignored += 1
            return
        fields = line.split()
        if len(fields) != 3:
            self.lines_malformed += 1
            return
        label, random_hex, secret_hex = fields
        if label not in LABELS:
            self.lines_ignored += 1
            return
        try:
            client_random = bytes.fromhex(random_hex)
            secret = bytes.fromhex(secret_hex)
        except ValueError:
            self.lines_malformed += 1
            return
        wanted = (48,) if label == CLIENT_RANDOM else (32, 48)  # TLS 1.3: the suite's hash length
        if len(client_random) != 32 or len(secret) not in wanted:
            self.lines_malformed += 1
            return
        self._secrets.setdefault(client_random, {})[label] = secret
        self.lines_used += 1
        self.generation += 1
