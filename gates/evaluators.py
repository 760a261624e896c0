"""evaluators: run a node's acceptance commands in its worktree, each rc and output recorded; all must exit 0."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from gates.core import gatecli, proc
from gates.core.dagfile import Check, did_you_mean, load_dag
from gates.core.errors import ProcError, UsageError
from gates.core.verdict import FAIL, PASS, USAGE, Item, Verdict

NAME = "evaluators"
CANNOT_START = (126, 127)  # the shell's "not executable" and "not found": the evaluator never ran


def check(evaluators: Sequence[Check], worktree: Path, *, log_path: Path | None = None,
          default_timeout: float = 600, env: Mapping[str, str] | None = None) -> Verdict:
    if not evaluators:
        return Verdict(NAME, PASS, "PASS: no evaluators declared")
    if not Path(worktree).is_dir():
        return Verdict(NAME, USAGE, f"ERROR: worktree {worktree} does not exist")
    items, results, log = [], [], []
    for ev in evaluators:
        timeout = ev.timeout or default_timeout
        try:
            done = proc.run_shell(ev.run, cwd=worktree, env=dict(env or {}), timeout=timeout)
        except ProcError as exc:
            items.append(Item("ERROR", ev.name, f"cannot start: {exc.message}"))
            results.append({"name": ev.name, "rc": None, "seconds": 0.0, "timed_out": False})
            continue
        output = done.stdout + done.stderr
        tail = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "")
        if done.timed_out:
            items.append(Item("TIMEOUT", ev.name, f"killed after {timeout:g}s"))
        elif done.rc in CANNOT_START:
            items.append(Item("ERROR", ev.name, f"cannot start (rc {done.rc}): {tail}"))
        elif done.rc:
            items.append(Item("FAIL", ev.name, f"rc {done.rc}" + (f": {tail}" if tail else "")))
        else:
            items.append(Item("PASS", ev.name, f"rc 0 ({done.seconds:.1f}s)"))
        results.append({"name": ev.name, "rc": done.rc, "seconds": round(done.seconds, 3), "timed_out": done.timed_out})
        log.append(f"== {ev.name}: `{ev.run}` in {worktree}: rc {done.rc}"
                   f"{' (timed out)' if done.timed_out else ''}, {done.seconds:.2f}s\n{output}")
    data = {"results": results}
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("\n".join(log))
        data["log"] = str(log_path)
    errors = [i for i in items if i.status == "ERROR"]
    failed = [i for i in items if i.status in ("FAIL", "TIMEOUT")]
    if errors:
        return Verdict(NAME, USAGE, f"ERROR: {len(errors)} evaluator(s) could not run", tuple(items), data)
    if failed:
        return Verdict(NAME, FAIL, f"FAIL: {len(failed)} of {len(items)} evaluator(s) failed", tuple(items), data)
    return Verdict(NAME, PASS, f"PASS: {len(items)} evaluator(s) passed", tuple(items), data)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Run a node's evaluators in its worktree (sh with pipefail, a timeout each).",
                       {1: "an evaluator failed or timed out", 2: "an evaluator could not start, or bad input"}, prog)
    p.add_argument("--worktree", required=True, help="where to run them")
    p.add_argument("--dag", help="take the evaluators of --node from this DAG")
    p.add_argument("--node", help="the node id")
    p.add_argument("--command", action="append", help="an evaluator command (repeatable) instead of --dag/--node")
    p.add_argument("--log", type=Path, help="write every evaluator's output here")
    p.add_argument("--timeout", type=float, default=600, help="seconds per evaluator without its own (default 600)")

    def decide(a) -> Verdict:
        if a.command:
            evs = [Check(f"cmd{i}", c) for i, c in enumerate(a.command, 1)]
        elif a.dag and a.node:
            dag = load_dag(a.dag)
            if a.node not in dag.by_id:
                raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
            evs = list(dag.by_id[a.node].evaluators)
        else:
            raise UsageError("give --dag and --node, or --command")
        return check(evs, Path(a.worktree), log_path=a.log, default_timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
