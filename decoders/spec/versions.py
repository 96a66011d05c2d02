"""Kafka version-range strings ("0+", "1-4", "3", "none") as inclusive integer ranges."""

from __future__ import annotations

from dataclasses import dataclass

OPEN = 1 << 15  # upper bound used for open ranges ("3+"); above any int16 version


@dataclass(frozen=True, slots=True)
class VersionRange:
    lo: int
    hi: int  # inclusive; OPEN for "n+"

    @classmethod
    def parse(cls, text: str | None) -> VersionRange | None:
        """Parse Kafka's version syntax; ``None`` and "none" mean no versions."""
        if text is None:
            return None
        text = text.strip()
        if text == "none":
            return None
        if text.endswith("+"):
            return cls(int(text[:-1]), OPEN)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def __str__(self) -> str:
        if self.hi == OPEN:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


def contains(text: str | None, version: int) -> bool:
    rng = VersionRange.parse(text)
    return rng is not None and version in rng
