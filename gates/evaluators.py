"""evaluators: run a node's acceptance commands in its worktree, each rc and output recorded; all must exit 0."""
from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from gates.shared import gatecli
from gates.shared.verdict import FAIL, PASS, USAGE, Item, Verdict
from orchestrate import atomic, proc
from orchestrate.dag.load import load_dag
from orchestrate.dag.model import Check
from orchestrate.dag.schema import did_you_mean
from orchestrate.errors import ProcError, UsageError

NAME = "evaluators"
# The shell's own codes for "not executable" and "not found": the evaluator never ran, so it is
# an environment problem (exit 2), never a verdict on the work.
CANNOT_START = (126, 127)
TAIL_CHARS = 200


def check(evaluators: Sequence[Check], worktree: Path, *, log_path: Path | None = None,
          default_timeout: float = 600, env: Mapping[str, str] | None = None,
          stop: Callable[[], bool] | None = None) -> Verdict:
    """Run every evaluator (even after a failure, so the log is complete); 0 all pass, 1 fail/timeout, 2 cannot start.
    `stop`: asked before each evaluator; once true, none more starts (the caller has stopped the run and will
    not use the verdict)."""
    if not evaluators:
        return Verdict(NAME, PASS, "PASS: no evaluators declared", (), {"log": None, "results": []})
    worktree = Path(worktree)
    log = _open_log(log_path)
    items: list[Item] = []
    results: list[dict] = []
    try:
        missing = not worktree.is_dir()
        for ev in evaluators:
            if stop is not None and stop():
                break
            timeout = ev.timeout or default_timeout
            if missing:
                item, result = _not_started(ev, f"worktree {worktree} does not exist")
                _log(log, ev, worktree, "not started", 0.0, f"worktree {worktree} does not exist\n")
            else:
                item, result = _run_one(ev, worktree, timeout, env, log)
            items.append(item)
            results.append(result)
    finally:
        if log is not None:
            log.close()
    data = {"log": str(log_path) if log_path is not None else None, "results": results}
    errors = sum(i.status == "ERROR" for i in items)
    failed = sum(i.status in ("FAIL", "TIMEOUT") for i in items)
    if errors:
        where = f"worktree {worktree} does not exist; " if missing else ""
        also = f"; {failed} failed" if failed else ""
        return Verdict(NAME, USAGE, f"ERROR: {where}{errors} of {len(items)} evaluator(s) could not start{also}",
                       tuple(items), data)
    if failed:
        return Verdict(NAME, FAIL, f"FAIL: {failed} of {len(items)} evaluator(s) failed", tuple(items), data)
    return Verdict(NAME, PASS, f"PASS: {len(items)} evaluator(s) passed", tuple(items), data)


def _run_one(ev: Check, worktree: Path, timeout: float, env: Mapping[str, str] | None,
             log: IO[str] | None) -> tuple[Item, dict]:
    try:
        done = proc.run_shell(ev.run, cwd=worktree, env=env, timeout=timeout)
    except ProcError as exc:  # the shell itself could not start, or the worktree vanished meanwhile
        _log(log, ev, worktree, "not started", 0.0, exc.message + "\n")
        return _not_started(ev, exc.message)
    output = done.stdout + done.stderr
    _log(log, ev, worktree, f"{done.rc}" + (f" (timed out after {timeout:g}s)" if done.timed_out else ""),
         done.seconds, output)
    tail = _last_line(output)
    if done.timed_out:
        item = Item("TIMEOUT", ev.name, f"killed after {timeout:g}s")
    elif done.rc in CANNOT_START:
        item = Item("ERROR", ev.name, f"cannot start: {tail or 'command not found or not executable'} (rc {done.rc})")
    elif done.rc != 0:
        item = Item("FAIL", ev.name, f"rc {done.rc}" + (f": {tail}" if tail else ""))
    else:
        item = Item("PASS", ev.name, f"rc 0 ({done.seconds:.1f}s)")
    return item, {"name": ev.name, "rc": done.rc, "seconds": round(done.seconds, 3), "timed_out": done.timed_out}


def _not_started(ev: Check, reason: str) -> tuple[Item, dict]:
    return (Item("ERROR", ev.name, f"cannot start: {reason}"),
            {"name": ev.name, "rc": None, "seconds": 0.0, "timed_out": False})


def _last_line(output: str) -> str:
    line = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "")
    return line if len(line) <= TAIL_CHARS else line[:TAIL_CHARS] + "..."


def _open_log(log_path: Path | None) -> IO[str] | None:
    """Opened before anything runs, so an unwritable log fails at once instead of after the evaluators."""
    if log_path is None:
        return None
    path = Path(log_path)
    try:
        # the node's run folder is the worker's to write: a link it planted there is not followed
        return io.TextIOWrapper(atomic.open_log(path), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the evaluator log {path}: {exc.strerror or exc}") from None


def _log(log: IO[str] | None, ev: Check, cwd: Path, rc: str, seconds: float, output: str) -> None:
    # written as each evaluator ends, so a long run can be followed and a crash keeps what finished
    if log is None:
        return
    log.write(f"== {ev.name}: `{ev.run}`\n   cwd {cwd.absolute()}\n   rc {rc}, {seconds:.2f}s\n")
    log.write(output if output.endswith("\n") or not output else output + "\n")
    log.write("\n")
    log.flush()


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Run a node's evaluators in its worktree (a shell with pipefail, a timeout each); "
                             "every one must exit 0.",
                       {0: "PASS: every evaluator exited 0 (or none is declared)",
                        1: "FAIL: an evaluator exited non-zero or timed out",
                        2: "an evaluator could not start (rc 126/127, missing worktree), or bad input"}, prog,
        examples=(
            'orchestrate gate evaluators --worktree .scratch/worktrees/demo/D1 --dag .ledger/state/dag.yaml --node D1',
            "orchestrate gate evaluators --worktree . --command 'pytest -q tests/test_db.py' --json",
        ))
    p.add_argument("--worktree", required=True, metavar="DIR", help="where the evaluators run")
    p.add_argument("--dag", metavar="PATH", help="take the evaluators of --node from this DAG")
    p.add_argument("--node", metavar="ID", help="the node whose evaluators run")
    p.add_argument("--command", action="append", metavar="CMD",
                   help="an evaluator command instead of --dag/--node (repeatable; named cmd1, cmd2, ...)")
    p.add_argument("--log", type=Path, metavar="FILE", help="write every evaluator's header and output here")
    p.add_argument("--timeout", type=gatecli.seconds, default=600.0, metavar="S",
                   help="seconds for each evaluator without its own timeout (default 600)")

    def decide(a: argparse.Namespace) -> Verdict:
        if a.command and (a.dag or a.node):
            gatecli.usage(p, "give --command, or --dag with --node, not both")
        if a.command:
            evs = [Check(f"cmd{i}", c) for i, c in enumerate(a.command, 1)]
        elif a.dag and a.node:
            dag = load_dag(a.dag)
            if a.node not in dag.by_id:
                raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
            evs = list(dag.by_id[a.node].evaluators)
        else:
            gatecli.usage(p, "give --dag PATH with --node ID, or at least one --command CMD")
        return check(evs, Path(a.worktree), log_path=a.log, default_timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)



if __name__ == "__main__":
    raise SystemExit(main())
