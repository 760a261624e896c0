"""trial-merge: merge a node branch onto a ref in a throwaway worktree and run the campaign checks there."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from gates.core import gatecli, git, proc
from gates.core.dagfile import Check, load_dag
from gates.core.errors import OrchestrateError, UsageError
from gates.core.verdict import ALTERNATIVE, FAIL, PASS, USAGE, Item, Verdict

NAME = "trial-merge"


def check(repo: Path, branch: str, onto: str, checks: Sequence[Check], *, scratch: Path | None = None,
          timeout: float = 600) -> Verdict:
    """0 clean, 1 regression, 3 conflict, 2 environment. Leaves no worktree, branch or lock behind."""
    try:
        return _trial(Path(repo), branch, onto, checks, scratch, timeout)
    except OrchestrateError as exc:
        return Verdict(NAME, USAGE, f"ERROR: {exc}")


def _trial(repo, branch, onto, checks, scratch, timeout) -> Verdict:
    head = git.rev_parse(repo, branch)
    if head is None:
        raise UsageError(f"`{branch}` does not name a commit")
    base = git.resolve(repo, onto)
    root = scratch or git.main_worktree(repo) / ".scratch" / "trial"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="merge-", dir=root))
    env = git.identity_env(repo)
    try:
        git.worktree_add_detached(repo, work, base)
        done = git.git(work, "merge", "--no-ff", "--no-commit", "--no-edit", head, check=False, env=env)
        if done.rc != 0:
            conflicts = git.conflicted_paths(work)
            git.merge_abort(work)
            if not conflicts:
                raise UsageError(f"git could not merge {branch}: {(done.stderr or done.stdout).strip()}")
            return Verdict(NAME, ALTERNATIVE, f"CONFLICT: {len(conflicts)} path(s) conflict",
                           tuple(Item("CONFLICT", p) for p in conflicts), {"conflicts": conflicts})
        tree = git.out(work, "write-tree")
        results = [(c, proc.run_shell(c.run, cwd=work, timeout=c.timeout or timeout)) for c in checks]
        failing = [(c, r) for c, r in results if not r]
        pre_existing: set[str] = set()
        if failing:  # run the failing checks on `onto` alone: did the merge break them?
            git.merge_abort(work)
            git.git(work, "checkout", "-q", "--detach", base)
            for c, _ in failing:
                if not proc.run_shell(c.run, cwd=work, timeout=c.timeout or timeout):
                    pre_existing.add(c.name)
        items = []
        for c, r in results:
            if r:
                items.append(Item("PASS", c.name))
            elif c.name in pre_existing:
                items.append(Item("PRE-EXISTING", c.name, f"fails without the merge too (rc {r.rc})"))
            else:
                items.append(Item("REGRESSION", c.name, f"rc {r.rc} only after merging {branch}"))
        data = {"merged_tree": tree, "conflicts": [],
                "checks": [{"name": c.name, "rc": r.rc, "seconds": round(r.seconds, 3),
                            "pre_existing": c.name in pre_existing} for c, r in results]}
        regressions = [i for i in items if i.status == "REGRESSION"]
        if regressions:
            return Verdict(NAME, FAIL, f"FAIL: {len(regressions)} regression(s)", tuple(items), data)
        return Verdict(NAME, PASS, f"CLEAN: merged cleanly; {len(results) - len(pre_existing)} check(s) pass"
                       + (f", {len(pre_existing)} already failing without it" if pre_existing else ""),
                       tuple(items), data)
    finally:
        git.git(repo, "worktree", "remove", "--force", "--force", str(work), check=False)
        shutil.rmtree(work, ignore_errors=True)
        git.git(repo, "worktree", "prune", check=False)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Merge BRANCH onto a ref in a throwaway worktree (never your checkout) and run "
                       "the campaign checks on the merged tree.",
                       {0: "clean merge, no check broken by it", 1: "a regression: a check fails only after the merge",
                        3: "CONFLICT: the merge conflicts (paths listed)", 2: "unknown branch or ref, bad input"}, prog)
    p.add_argument("branch", help="the node branch to merge")
    p.add_argument("--onto", default="HEAD", help="the ref to merge onto (default HEAD)")
    p.add_argument("--repo", type=Path, default=Path("."), help="the repository (default .)")
    p.add_argument("--check", action="append", default=[], metavar="NAME=CMD", help="a check (repeatable)")
    p.add_argument("--dag", help="use the DAG's top-level `checks:`")
    p.add_argument("--timeout", type=float, default=600, help="seconds per check (default 600)")

    def decide(a) -> Verdict:
        checks = []
        for spec in a.check:
            name, eq, cmd = spec.partition("=")
            if not eq or not name or not cmd:
                raise UsageError(f"--check wants NAME=CMD, got `{spec}`")
            checks.append(Check(name, cmd))
        if a.dag:
            checks += list(load_dag(a.dag).checks)
        return check(a.repo, a.branch, a.onto, checks, timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
