"""What a gate returns: a small frozen record the engine reads in-process and `main()` prints."""
from __future__ import annotations

from dataclasses import dataclass, field

PASS, FAIL, USAGE, ALTERNATIVE = 0, 1, 2, 3


@dataclass(frozen=True)
class Item:
    """One checked thing: a status word (OK, DENY, FRESH, STALE, ...), what it is about, and why."""

    status: str
    subject: str
    detail: str = ""

    def line(self) -> str:
        text = f"{self.status:<10} {self.subject}"
        return f"{text}  <- {self.detail}" if self.detail else text

    def as_dict(self) -> dict:
        return {"status": self.status, "subject": self.subject, "detail": self.detail}


@dataclass(frozen=True)
class Verdict:
    """`code` follows the gate contract: 0 pass, 1 fail, 2 usage or environment, 3 alternative route."""

    gate: str
    code: int
    summary: str
    items: tuple[Item, ...] = ()
    data: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.code == PASS

    def lines(self) -> list[str]:
        return [i.line() for i in self.items] + [self.summary]

    def failing(self) -> list[Item]:
        return [i for i in self.items if i.status not in _GOOD]

    def as_dict(self) -> dict:
        return {"gate": self.gate, "code": self.code, "ok": self.ok, "summary": self.summary,
                "items": [i.as_dict() for i in self.items], "data": self.data}


_GOOD = frozenset({"OK", "PASS", "FRESH", "WIDEN", "CLEAN", "SKIP", "INFO", "PRE-EXISTING"})


def usage(gate: str, message: str) -> Verdict:
    """A gate that cannot run: never a pass."""
    return Verdict(gate, USAGE, f"ERROR: {message}")
