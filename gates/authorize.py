"""authorize: every given path is covered by some node's surface."""
from __future__ import annotations

from typing import Mapping, Sequence

from gates.shared import gatecli
from gates.shared.verdict import FAIL, PASS, Item, Verdict
from orchestrate.dag import surface
from orchestrate.dag.load import load_dag

NAME = "authorize"


def check(surfaces: Mapping[str, Sequence[str]], paths: Sequence[str]) -> Verdict:
    """Each path against every node's tokens, in the given (natural) order; the first covering node is named."""
    if not paths:
        return Verdict(NAME, PASS, "PASS: no paths to authorize")
    items = []
    for path in paths:
        owner = next((n for n, tokens in surfaces.items() if surface.covering(tuple(tokens), path)), None)
        items.append(Item("OK", path, f"node {owner}") if owner else Item("DENY", path, "no node's surface covers it"))
    denied = sum(i.status == "DENY" for i in items)
    if denied:
        return Verdict(NAME, FAIL, f"FAIL: {denied} unauthorized path(s)", tuple(items))
    return Verdict(NAME, PASS, "PASS: every path is authorized by a DAG node", tuple(items))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Check that every path is covered by some node's file_surface.",
                       {1: "a path no node covers", 2: "missing, unreadable or invalid DAG"}, prog,
        examples=(
            'git diff --name-only main campaign/demo | orchestrate gate authorize --dag .ledger/state/dag.yaml',
            'orchestrate gate authorize --dag .ledger/state/dag.yaml --path src/app.py --path docs/guide.md',
        ))
    p.add_argument("--dag", required=True, help="the DAG file (validated on every run: never a cache)")
    p.add_argument("--path", action="append", help="a path (repeatable); else one per line on stdin")

    def decide(a) -> Verdict:
        dag = load_dag(a.dag)
        return check({n.id: n.file_surface for n in dag.nodes}, gatecli.read_paths(a.path))

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
