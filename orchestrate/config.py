"""`<ledger>/config.yaml`: one reader for all its sections (coherence, executor), so a file that cannot
be read or parsed is reported the same way whichever part of orchestrate reads it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrate.errors import UsageError


@dataclass(frozen=True)
class Section:
    path: Path
    value: object  # the section's mapping as written; None when the file or the section is absent
    line: int  # where the section's key is, for messages

    def error(self, where: str, line: int, message: str) -> UsageError:
        return UsageError(f"{self.path}:{line}: {where}: {message}" if line else f"{self.path}: {where}: {message}")


def read(ledger: Path | None, name: str) -> Section:
    """The `name:` section. A malformed file raises UsageError naming file and line: a typo must never
    become a silent default."""
    path = Path(ledger or ".") / "config.yaml"
    if ledger is None or not path.exists():
        return Section(path, None, 0)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the config: {getattr(exc, 'strerror', None) or exc}") from None
    from orchestrate.dag import yamlfile  # yaml is heavy; only a run that has a config pays for it
    data, problems = yamlfile.load(text, str(path), fast=False)
    if problems:
        raise UsageError(str(problems[0]), hint="fix config.yaml")
    if data is None:
        return Section(path, None, 0)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping of settings at the top, got {type(data).__name__}")
    return Section(path, data.get(name), data.key_line(name) if name in data else 0)
