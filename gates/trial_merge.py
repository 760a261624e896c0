"""trial-merge: merge a node branch onto a ref in a throwaway worktree and run the campaign checks on the result."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from gates.shared import gatecli
from gates.shared.verdict import ALTERNATIVE, FAIL, PASS, USAGE, Item, Verdict
from orchestrate import git, proc
from orchestrate.dag.load import load_dag
from orchestrate.dag.model import Check
from orchestrate.errors import OrchestrateError, UsageError

NAME = "trial-merge"
CODES = {0: "CLEAN: merged cleanly and no check broke because of the merge",
         1: "FAIL: a regression - a check passes on the ref alone but fails after the merge",
         2: "environment: repository missing, unknown branch or ref, merge cannot start, bad arguments",
         3: "CONFLICT: the merge conflicts (the paths are listed)"}
# The user's config must not change the outcome: rerere could silently resolve a conflict from its cache
# (and write to the shared .git); autostash has nothing to stash in a fresh checkout.
_MERGE_CONFIG = ("-c", "rerere.enabled=false", "-c", "merge.autoStash=false")


def check(repo: Path, branch: str, onto: str, checks: Sequence[Check], *, scratch: Path | None = None,
          timeout: float = 600, keep_worktree: Path | None = None) -> Verdict:
    """0 clean, 1 regression, 3 conflict, 2 environment; never touches the user's checkout.

    `keep_worktree`: a path (absent or empty) that receives a plain copy of the tree as the merge left it
    (conflict markers included, before any check ran), without `.git`; nothing git knows about survives.
    """
    try:
        top = git.toplevel(_existing(Path(repo)))
        head = git.rev_parse(top, branch)
        if head is None:
            raise UsageError(f"cannot merge `{branch}`: it does not name a commit in {top}",
                             hint="check the branch with `git branch --list`")
        base = git.resolve(top, onto)
        if keep_worktree is not None and Path(keep_worktree).exists() and any(Path(keep_worktree).iterdir()):
            raise UsageError(f"keep_worktree {keep_worktree} exists and is not empty")
        root = Path(scratch) if scratch is not None else git.main_worktree(top) / ".scratch" / "trial"
        with _Scratch(top, root) as space:
            return _trial(top, space, branch, head, base, list(checks), timeout, keep_worktree)
    except OrchestrateError as exc:
        return Verdict(NAME, USAGE, f"ERROR: {exc}", data=_data())


def _existing(path: Path) -> Path:
    if not path.is_dir():
        raise UsageError(f"repository {path} does not exist or is not a directory")
    return path


def _trial(repo: Path, space: "_Scratch", branch: str, head: str, base: str, checks: list[Check],
           timeout: float, keep: Path | None) -> Verdict:
    work = space.worktree(base)
    done = git.git(work, *_MERGE_CONFIG, "merge", "--no-ff", "--no-commit", "--no-edit", head,
                   check=False, env=git.identity_env(repo))
    if keep is not None:
        shutil.copytree(work, keep, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True, symlinks=True)
    if done.rc != 0:
        conflicts = git.conflicted_paths(work)
        git.merge_abort(work)
        if not conflicts:  # refused before merging anything (unrelated histories, a broken object, ...)
            why = (done.stderr or done.stdout).strip().splitlines()
            raise UsageError(f"git could not merge `{branch}` onto {base[:12]}: {why[-1] if why else f'rc {done.rc}'}")
        return Verdict(NAME, ALTERNATIVE, f"CONFLICT: {len(conflicts)} path(s) conflict",
                       tuple(Item("CONFLICT", p) for p in conflicts), _data(head, base, conflicts=conflicts))
    tree = git.out(work, "write-tree")
    merged = [(c, proc.run_shell(c.run, cwd=work, timeout=c.timeout or timeout)) for c in checks]
    alone: dict[int, proc.Completed] = {}
    if any(not r for _, r in merged):
        # A second fresh checkout of `onto`: the first one now holds whatever the checks wrote.
        bare = space.worktree(base)
        alone = {i: proc.run_shell(c.run, cwd=bare, timeout=c.timeout or timeout)
                 for i, (c, r) in enumerate(merged) if not r}
    items, rows, regressions, pre_existing = [], [], 0, 0
    for i, (c, r) in enumerate(merged):
        before = alone.get(i)
        old = before is not None and not before
        rows.append({"name": c.name, "rc": r.rc, "seconds": round(r.seconds, 3), "pre_existing": old})
        rc = f"rc {r.rc}" + (" timed out" if r.timed_out else "")
        if r:
            items.append(Item("PASS", c.name))
        elif old:
            pre_existing += 1
            items.append(Item("PRE-EXISTING", c.name, f"fails without the merge too ({rc})"))
        else:
            regressions += 1
            items.append(Item("REGRESSION", c.name, f"{rc} only after merging {branch}"))
    data = _data(head, base, tree=tree, checks=rows)
    if regressions:
        return Verdict(NAME, FAIL, f"FAIL: {regressions} regression(s)", tuple(items), data)
    passing = len(merged) - pre_existing
    tail = f", {pre_existing} pre-existing failure(s)" if pre_existing else ""
    return Verdict(NAME, PASS, f"CLEAN: merged cleanly; {passing} check(s) pass{tail}", tuple(items), data)


def _data(head: str | None = None, base: str | None = None, *, tree: str | None = None,
          conflicts: list[str] | None = None, checks: list[dict] | None = None) -> dict:
    return {"merged_tree": tree, "conflicts": conflicts or [], "checks": checks or [], "branch_sha": head,
            "onto_sha": base}


class _Scratch:
    """Detached worktrees in fresh temporary directories; all of them gone on exit, however it is left."""

    def __init__(self, repo: Path, root: Path) -> None:
        self.repo, self.root, self.paths = repo, root, []
        self.created = []  # directories above the worktrees that we made, removed again when empty
        p = root.resolve()
        while not p.exists():
            self.created.append(p)
            p = p.parent

    def __enter__(self) -> "_Scratch":
        return self

    def worktree(self, start: str) -> Path:
        for _ in range(3):  # a concurrent trial may remove the (empty) scratch root between mkdir and mkdtemp
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                path = Path(tempfile.mkdtemp(prefix="merge-", dir=self.root))
                break
            except FileNotFoundError:
                continue
        else:
            raise UsageError(f"cannot create a scratch directory under {self.root}")
        self.paths.append(path)
        git.worktree_add_detached(self.repo, path, start)
        return path

    def __exit__(self, *exc) -> None:
        # Cleanup is idempotent, so a second Ctrl-C arriving during it only restarts it.
        interrupted: BaseException | None = None
        for _ in range(3):
            try:
                self._cleanup()
                break
            except KeyboardInterrupt as ki:
                interrupted = ki
        if interrupted is not None and exc[0] is None:
            raise interrupted

    def _cleanup(self) -> None:
        for path in self.paths:
            git.worktree_remove(self.repo, path)
            shutil.rmtree(path, ignore_errors=True)
            # An interrupted `worktree add` leaves its entry locked ("initializing"), which prune skips.
            git.git(self.repo, "worktree", "unlock", str(path), check=False)
        if self.paths:
            git.git(self.repo, "worktree", "prune", check=False)
        for d in self.created:
            try:
                os.rmdir(d)
            except OSError:
                break  # not empty: another trial is using it, or someone put something there


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Merge BRANCH onto a ref in a throwaway detached worktree (never your checkout), "
                       "run the campaign checks on the merged tree, and rerun any failing check on the ref alone "
                       "to tell a REGRESSION from a PRE-EXISTING failure. Leaves no worktree, branch or lock.",
                       CODES, prog,
        examples=(
            'orchestrate gate trial-merge node/demo/D1 --onto campaign/demo --dag .ledger/state/dag.yaml',
            "orchestrate gate trial-merge feature/x --check 'tests=pytest -q'",
        ))
    p.add_argument("branch", metavar="BRANCH", help="the node branch (or any commit) to merge")
    p.add_argument("--onto", default="HEAD", metavar="REF", help="the ref to merge onto (default HEAD)")
    p.add_argument("--repo", type=Path, default=Path("."), metavar="DIR", help="the repository (default .)")
    p.add_argument("--check", action="append", default=[], metavar="NAME=CMD",
                   help="a check: a shell command that must exit 0 (repeatable)")
    p.add_argument("--dag", metavar="PATH", help="also run the DAG's top-level `checks:`")
    p.add_argument("--timeout", type=float, default=600, metavar="S",
                   help="seconds per check without its own timeout (default 600)")

    def decide(a) -> Verdict:
        checks = []
        for spec in a.check:
            name, eq, cmd = spec.partition("=")
            if not eq or not name.strip() or not cmd.strip():
                raise UsageError(f"--check wants NAME=CMD, got `{spec}`")
            checks.append(Check(name.strip(), cmd))
        if a.dag:
            checks += list(load_dag(a.dag).checks)
        if a.timeout <= 0:
            raise UsageError(f"--timeout must be positive, got {a.timeout:g}")
        names = [c.name for c in checks]
        if len(set(names)) != len(names):
            raise UsageError("two checks share a name: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
        return check(a.repo, a.branch, a.onto, checks, timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
