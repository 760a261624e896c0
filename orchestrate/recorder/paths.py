"""Paths of a project's recorder and scratch space (pure path math, no I/O)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path  # the main checkout

    @property
    def ledger(self) -> Path:
        return self.root / ".ledger"

    @property
    def scratch(self) -> Path:
        return self.root / ".scratch"

    @property
    def default_dag(self) -> Path:
        return self.ledger / "state" / "dag.yaml"

    @property
    def config(self) -> Path:
        return self.ledger / "config.yaml"

    @property
    def active_dag(self) -> Path:
        return self.ledger / "active-dag"

    @property
    def project_gates(self) -> Path:
        return self.ledger / "gates"

    def state(self, topic: str) -> Path:
        return self.ledger / "state" / topic

    def journal(self, topic: str) -> Path:
        return self.state(topic) / "journal.jsonl"

    def checkpoints(self, topic: str) -> Path:
        return self.state(topic) / "checkpoints"

    def worktrees(self, topic: str) -> Path:
        return self.scratch / "worktrees" / topic

    def worktree(self, topic: str, node: str) -> Path:
        return self.worktrees(topic) / node

    def integration(self, topic: str) -> Path:
        return self.scratch / "integration" / topic

    def runs(self, topic: str) -> Path:
        return self.scratch / "runs" / topic

    def answer(self, topic: str) -> Path:
        """The answer `decide` leaves for a running campaign (seams/inbox.py)."""
        return answer_path(self.scratch, topic)


def answer_path(scratch: Path, topic: str) -> Path:
    return scratch / "answers" / f"{topic}.json"
