"""`<ledger>/config.yaml`: one reader for all its sections (coherence, executor, notify), so a file that cannot
be read or parsed is reported the same way whichever part of orchestrate reads it."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from orchestrate import stamps
from orchestrate.errors import UsageError


@dataclass(frozen=True)
class Section:
    path: Path
    value: object  # the section's mapping as written; None when the file or the section is absent
    line: int  # where the section's key is, for messages

    def error(self, where: str, line: int, message: str) -> UsageError:
        return UsageError(f"{self.path}:{line}: {where}: {message}" if line else f"{self.path}: {where}: {message}")

    def refuse(self, where: str, line: int, message: str) -> None:
        """A problem of this section. A run stops at the first; while `problems` collects, the reader goes on
        with the default in its place, so `validate` lists every mistake at once, not one per section."""
        collected = getattr(_collecting, "refused", None)
        if collected is None:
            raise self.error(where, line, message)
        collected.append(self.error(where, line, message))


SECTIONS = ("coherence", "executor", "sandbox", "notify")  # every top-level key config.yaml may hold
# while `problems` runs, in its thread alone: the readers' refusals. A person's edit of config.yaml is checked
# mid-run (engine/watch.py) while evaluator threads read their settings, whose refusals must still raise
_collecting = threading.local()


def read(ledger: Path | None, name: str) -> Section:
    """The `name:` section. A malformed file, or a key that is no section (`coherance:`), raises UsageError
    naming file and line, whichever section is asked for: a typo must never become a silent default."""
    path = Path(ledger or ".") / "config.yaml"
    data, problems = _parsed_once(path) if ledger is not None else (None, [])
    collecting = getattr(_collecting, "refused", None) is not None
    problems = [p for p in problems if not (collecting and p.code == "unknown-section")]
    if problems:
        raise UsageError(str(problems[0]), hint="fix config.yaml")
    if data is None:
        return Section(path, None, 0)
    return Section(path, data.get(name), data.key_line(name) if name in data else 0)


def problems(ledger: Path, readers: dict) -> list:
    """Every problem of config.yaml in one pass, as `Problem`s (file, line, field, message): the file's own
    (unreadable, malformed YAML, not a mapping, each unknown section), then every one of each section, as
    its reader (`readers[name](ledger)`, the one the run uses) reports it."""
    from orchestrate.dag.yamlfile import Problem
    path = Path(ledger) / "config.yaml"
    data, found = _parsed(path)
    if data is None or any(p.code != "unknown-section" for p in found):
        return found
    refused: list = []
    _collecting.refused = refused  # the unknown sections are reported above, once; each reader its own section
    try:
        for name in SECTIONS:
            if name not in data:
                continue
            try:
                readers[name](ledger)
            except UsageError as exc:  # one a reader cannot go on after (the Dask executor without a scheduler)
                refused.append(exc)
            found.extend(_as_problem(Problem, str(path), name, exc) for exc in refused)
            refused.clear()
    finally:
        _collecting.refused = None
    return sorted(found, key=lambda p: p.line)


_seen: dict[str, tuple[tuple, tuple]] = {}  # path -> (its stat key, what _parsed made of it)


def _parsed_once(path: Path) -> tuple[object, list]:
    """_parsed, again only when the file's stat says it changed (orchestrate.stamps): the engine asks for
    a section many times a transition (the sandbox setting, once per node it schedules)."""
    try:
        st = os.stat(path)
    except OSError:
        return _parsed(path)
    key, hit = stamps.key(st), _seen.get(str(path))
    if hit is not None and hit[0] == key:
        return hit[1]
    found = _parsed(path)
    if stamps.settled(st):  # else a second write within the clock's tick could keep the stat
        _seen[str(path)] = (key, found)
    return found


def _parsed(path: Path) -> tuple[object, list]:
    """(the file's mapping or None, its problems): a missing or empty file is no settings, not a problem."""
    if not path.exists():
        return None, []
    from orchestrate.dag import yamlfile  # yaml is heavy; only a run that has a config pays for it
    from orchestrate.dag.schema import did_you_mean, kind_of
    Problem = yamlfile.Problem
    try:
        text = _regular_text(path)
    except OSError as exc:
        return None, [Problem(str(path), 0, "", "unreadable", f"cannot read the config: {exc.strerror or exc}")]
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        return None, [Problem(str(path), line, "", "unreadable",
                              f"cannot read the config: not UTF-8 text (byte {exc.start}); save it as UTF-8")]
    data, found = yamlfile.load(text, str(path), fast=False)
    if found or data is None:
        return None, found
    if not isinstance(data, dict):
        return None, [Problem(str(path), getattr(data, "line", 1), "", "not-a-mapping",
                              f"expected a mapping of settings at the top, got {kind_of(data)}")]
    unknown = [Problem(str(path), data.key_line(key), str(key), "unknown-section",
                       f"unknown setting{did_you_mean(str(key), SECTIONS)}; settings: {', '.join(SECTIONS)}")
               for key in data if key not in SECTIONS]
    return data, unknown


def _regular_text(path: Path) -> str:
    """The file's text, when it is a regular file: a pipe planted there would block the read for good
    (it is opened without waiting for a writer, and refused)."""
    import errno

    from orchestrate import git_files
    try:
        fd, _ = git_files.open_regular(path, follow=True)
    except git_files.NotRegular:
        raise OSError(errno.EINVAL, "not a regular file") from None
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8")


def _as_problem(Problem, file: str, name: str, exc: UsageError):
    """A reader's one-line refusal `FILE:LINE: FIELD: MESSAGE` taken apart again into a Problem."""
    import re
    found = re.match(rf"^{re.escape(file)}(?::(\d+))?: (?:([\w.\[\]-]+): )?(.*)$", exc.message, re.S)
    if not found:
        return Problem(file, 0, name, "config", exc.message)
    return Problem(file, int(found.group(1) or 0), found.group(2) or name, "config", found.group(3))


NOTIFY_EVENTS = ("seam", "halt", "done", "verdict")
NOTIFY_KEYS = ("run", "events", "timeout")
NOTIFY_TIMEOUT = 10.0  # seconds: long enough for a webhook, short enough that the end of a run never waits long


@dataclass(frozen=True)
class NotifyCommand:
    run: str  # a shell command line
    events: tuple[str, ...] = ("seam", "halt", "done")  # verdicts are many: only on request
    timeout: float = NOTIFY_TIMEOUT


def notify(ledger: Path | None) -> list[NotifyCommand]:
    """The `notify:` section: a command, or a list of commands and {run, events, timeout} mappings."""
    found = read(ledger, "notify")
    value = found.value
    if value is None:
        return []
    if isinstance(value, str):
        return [c for c in [_notify_command(found, "notify", found.line, value)] if c is not None]
    if not isinstance(value, list):
        found.refuse("notify", found.line, "expected a command, or a list of commands")
        return []
    return [c for c in (_notify_item(found, value, i) for i in range(len(value))) if c is not None]


def _notify_item(found: Section, items: list, i: int) -> NotifyCommand | None:
    item, where = items[i], f"notify[{i}]"
    line = items.item_line(i) if hasattr(items, "item_line") else found.line
    if isinstance(item, str):
        return _notify_command(found, where, line, item)
    if not isinstance(item, dict):
        found.refuse(where, line, "expected a command, or a mapping of run, events and timeout")
        return None
    for key in item:
        if key not in NOTIFY_KEYS:
            found.refuse(f"{where}.{key}", _key_line(item, key, line), f"unknown key; keys: {', '.join(NOTIFY_KEYS)}")
    if "run" in item:
        command = _notify_command(found, f"{where}.run", _key_line(item, "run", line), item["run"])
    else:
        command = found.refuse(where, line, "no `run:`: the command to run")
    events = item.get("events", list(NotifyCommand.events))
    events = [events] if isinstance(events, str) else events
    at = _key_line(item, "events", line)
    if not isinstance(events, list) or not events:
        found.refuse(f"{where}.events", at, f"expected a list of events out of {', '.join(NOTIFY_EVENTS)}")
        events = []
    for event in events:
        if event not in NOTIFY_EVENTS:
            found.refuse(f"{where}.events", at, f"unknown event `{event}`; events: {', '.join(NOTIFY_EVENTS)}")
    timeout = item.get("timeout", NOTIFY_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        found.refuse(f"{where}.timeout", _key_line(item, "timeout", line), "expected a number of seconds above 0")
        timeout = NOTIFY_TIMEOUT
    if command is None:
        return None
    return NotifyCommand(command.run, tuple(dict.fromkeys(e for e in events if e in NOTIFY_EVENTS)), float(timeout))


def _notify_command(found: Section, where: str, line: int, command: object) -> NotifyCommand | None:
    if not isinstance(command, str) or not command.strip():
        return found.refuse(where, line, "expected a command line")
    return NotifyCommand(command)


def _key_line(mapping: dict, key: str, default: int) -> int:
    return mapping.key_line(key) if hasattr(mapping, "key_line") and key in mapping else default
