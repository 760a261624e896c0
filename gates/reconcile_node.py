"""reconcile-node: every path a node touched lies inside its own declared surface."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from gates.shared import case_names, gatecli
from gates.shared.verdict import FAIL, PASS, Item, Verdict
from orchestrate import git
from orchestrate.dag import surface
from orchestrate.dag.load import load_dag
from orchestrate.dag.schema import did_you_mean
from orchestrate.errors import UsageError

NAME = "reconcile-node"


def check(node_id: str, node_surface: Sequence[str], changes: Sequence[tuple[str, str]],
          collide: Mapping[str, str] | None = None) -> Verdict:
    """Judge (status, path) changes against the node's own tokens; a sibling's surface grants nothing.
    `collide`: {added path: a name outside the change it is one with where case or composition is not told apart}
    (gates/shared/case_names.py); such a path is undeclared when that name lies outside the surface."""
    items = []
    for status, path in changes:
        token = surface.covering(tuple(node_surface), path)
        other = (collide or {}).get(path)
        if token and other and not surface.covering(tuple(node_surface), other):
            items.append(Item("UNDECLARED", f"{status} {path}", f"one with {other}, outside the declared surface "
                              f"of {node_id}, where case or accents' composition is not told apart (macOS, Windows): a checkout holds "
                              "only one of them"))
            continue
        items.append(Item("OK", f"{status} {path}", f"declared surface of {node_id} ({token})") if token else
                     Item("UNDECLARED", f"{status} {path}", _outside(node_id, node_surface, path)))
    bad = [i for i in items if i.status == "UNDECLARED"]
    if not items:
        return Verdict(NAME, PASS, f"PASS: node {node_id} touched nothing")
    if bad:
        return Verdict(NAME, FAIL, f"FAIL: {len(bad)} undeclared touch(es) for node {node_id}", tuple(items),
                       {"undeclared": [i.subject.split(" ", 1)[1] for i in bad]})
    return Verdict(NAME, PASS, f"PASS: every touched path of node {node_id} falls under its declared surface",
                   tuple(items))


def _outside(node_id: str, node_surface: Sequence[str], path: str) -> str:
    return surface.short_of(tuple(node_surface), path, f"the surface of {node_id}") \
        or f"outside the declared surface of {node_id}"


def added(changes: Sequence[tuple[str, str]]) -> list[str]:
    """The paths a change added (a rename's new side is an addition: `--no-renames`)."""
    return [path for status, path in changes if status == "A"]


def changes_between(repo: str | Path, base: str, head: str | None = None) -> list[tuple[str, str]]:
    """(status, path) pairs from base to head; renames count as both paths; without head, the worktree's
    uncommitted and untracked changes count too."""
    pairs = git.changed_paths(repo, base, head)
    if head is None:
        known = {p for _, p in pairs}
        # -z: a name git would quote (core.quotePath: `"donn\303\251es/.gitignore"`) is read as it is
        for ln in git.git(repo, "ls-files", "-z", "--others", "--exclude-standard").stdout.split("\0"):
            if ln and ln not in known:
                pairs.append(("A", ln))
    return sorted(set(pairs), key=lambda sp: (sp[1], sp[0]))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Check that every path a node touched lies inside its own file_surface "
                       "(renames count both paths; deletions count).", {1: "an undeclared touch",
                       2: "unknown node, bad refs, missing or invalid DAG"}, prog,
        examples=(
            'orchestrate gate reconcile-node --dag .ledger/state/dag.yaml --node D1 --base main --head node/demo/D1',
        ))
    p.add_argument("--dag", required=True, help="the DAG file (validated on every run)")
    p.add_argument("--node", required=True, help="the node id")
    p.add_argument("--base", help="the node's base commit")
    p.add_argument("--head", help="the node's head commit (with --base)")
    p.add_argument("--repo", default=".", help="repository for --base/--head (default: .)")
    p.add_argument("--worktree", help="the node's worktree: its changes since --base, committed or not")
    p.add_argument("--path", action="append", help="a touched path (repeatable); else read from stdin")

    def decide(a) -> Verdict:
        dag = load_dag(a.dag)
        if a.node not in dag.by_id:
            raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
        tokens = dag.by_id[a.node].file_surface
        if a.worktree:
            if not a.base:
                raise UsageError("--worktree needs --base")
            return check(a.node, tokens, changes_between(a.worktree, git.resolve(a.worktree, a.base)))
        if a.base or a.head:
            if not (a.base and a.head):
                raise UsageError("give both --base and --head")
            base, head = git.resolve(a.repo, a.base), git.resolve(a.repo, a.head)
            changes = changes_between(a.repo, base, head)
            return check(a.node, tokens, changes, case_names.collisions(a.repo, base, head, added(changes)))
        return check(a.node, tokens, [("M", p) for p in gatecli.read_paths(a.path)])

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
