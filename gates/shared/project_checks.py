"""The project's own checks that coherence runs: the `coherence:` section of `<ledger>/config.yaml` (names,
ignore, evaluators, timeout) read strictly, and the executables in `<ledger>/gates/` with the configured
evaluators run at the head tree. A gate or evaluator that cannot run is an ERROR item: it never passes."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gates.shared.verdict import Item
from orchestrate import proc
from orchestrate.errors import ProcError

DEFAULT_TIMEOUT = 1800  # seconds for one project gate or evaluator; `coherence.timeout` overrides
CONFIG_KEYS = ("names", "ignore", "evaluators", "timeout")
EVALUATOR_KEYS = ("name", "run", "timeout")
_MAX_TEXT = 240  # an error line quotes at most this much of the gate's output


@dataclass(frozen=True)
class Evaluator:
    name: str
    run: str
    timeout: int | None = None


@dataclass(frozen=True)
class Config:
    names: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    evaluators: tuple[Evaluator, ...] = ()
    timeout: int = DEFAULT_TIMEOUT


def load_config(ledger: Path | None) -> Config:
    """The `coherence:` section of `<ledger>/config.yaml`; a missing file or section is the default.

    Anything malformed raises UsageError naming the file and line (while `config.problems` collects, each
    problem is kept and the rest still read): a typo must not become a silent pass.
    """
    from orchestrate import config
    from orchestrate.dag.schema import did_you_mean
    found = config.read(ledger, "coherence")
    section, bad = found.value, found.refuse
    if section is None:
        return Config()
    if not isinstance(section, dict):
        bad("coherence", found.line, "expected a mapping of names, ignore, evaluators, timeout")
        return Config()
    for key in section:
        if key not in CONFIG_KEYS:
            bad(f"coherence.{key}", section.key_line(key),
                f"unknown setting{did_you_mean(str(key), CONFIG_KEYS)}; settings: {', '.join(CONFIG_KEYS)}")

    def texts(key: str) -> tuple[str, ...]:
        value = section.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() and "\n" not in v for v in value):
            bad(f"coherence.{key}", section.key_line(key), "expected a list of non-empty one-line strings")
            return ()
        return tuple(v.strip() for v in value)

    timeout = section.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
        bad("coherence.timeout", section.key_line("timeout"), "expected a positive number of seconds")
        timeout = DEFAULT_TIMEOUT
    names, ignore = texts("names"), texts("ignore")
    return Config(names, ignore, _evaluators(section, bad), timeout)


def _evaluators(section: dict, bad) -> tuple[Evaluator, ...]:
    evaluators = []
    raw = section.get("evaluators") or []
    if not isinstance(raw, list):
        bad("coherence.evaluators", section.key_line("evaluators"), "expected a list of {name, run}")
        return ()
    for i, ev in enumerate(raw):
        where = f"coherence.evaluators[{i}]"
        line = raw.item_line(i) if hasattr(raw, "item_line") else 0
        for key in ev if isinstance(ev, dict) else ():
            if key not in EVALUATOR_KEYS:
                bad(f"{where}.{key}", line, f"unknown key; keys: {', '.join(EVALUATOR_KEYS)}")
        if not isinstance(ev, dict) or not isinstance(ev.get("run"), str) or not ev["run"].strip():
            bad(where, line, "expected {name, run} with a non-empty `run` command")
            continue
        t = ev.get("timeout")
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t <= 0):
            bad(f"{where}.timeout", line, "expected a positive number of seconds")
            t = None
        evaluators.append(Evaluator(str(ev.get("name") or f"evaluator-{i + 1}"), ev["run"], t))
    return tuple(evaluators)


def gate_files(ledger: Path | None) -> list[Path]:
    folder = ledger / "gates" if ledger is not None else None
    if folder is None or not folder.is_dir():
        return []
    return [p for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if not p.name.startswith(".") and not p.name.upper().startswith("README") and not p.is_dir()]


def _tail(done: proc.Completed) -> str:
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return f": {lines[-1].strip()[:_MAX_TEXT]}" if lines else ""


def run_gate(path: Path, cwd: Path, env: dict[str, str], timeout: int) -> Item:
    subject = f"gate {path.name}"
    if not os.access(path, os.X_OK):
        return Item("ERROR", subject, "not executable: chmod +x or remove it")
    try:
        done = proc.run([str(path)], cwd=cwd, env=env, timeout=timeout)
    except ProcError as exc:
        return Item("ERROR", subject, f"cannot start: {exc.message}")
    if done.timed_out:
        return Item("FAIL", subject, f"timed out after {timeout}s")
    return Item("PASS", subject) if done.rc == 0 else Item("FAIL", subject, f"rc {done.rc}{_tail(done)}")


def run_evaluator(ev: Evaluator, cwd: Path, env: dict[str, str], timeout: int) -> Item:
    subject = f"evaluator {ev.name}"
    limit = ev.timeout or timeout
    try:
        done = proc.run_shell(ev.run, cwd=cwd, env=env, timeout=limit)
    except ProcError as exc:
        return Item("ERROR", subject, f"cannot start: {exc.message}")
    if done.timed_out:
        return Item("FAIL", subject, f"timed out after {limit}s")
    if done.rc in (126, 127):  # the shell could not find or execute the command
        return Item("ERROR", subject, f"cannot start `{ev.run}` (rc {done.rc}){_tail(done)}")
    return Item("PASS", subject) if done.rc == 0 else Item("FAIL", subject, f"rc {done.rc}{_tail(done)}")
