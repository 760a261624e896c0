"""collision-check: do requested paths collide with the surfaces of concurrent nodes? WIDEN (0) or SERIALIZE (3)."""
from __future__ import annotations

from typing import Mapping, Sequence

from gates.shared import gatecli
from gates.shared.verdict import ALTERNATIVE, PASS, USAGE, Item, Verdict
from orchestrate.dag import surface
from orchestrate.dag.load import load_dag
from orchestrate.dag.schema import did_you_mean
from orchestrate.errors import UsageError

NAME = "collision-check"


def check(requested: Sequence[str], against: Mapping[str, Sequence[str]]) -> Verdict:
    if not requested:
        return Verdict(NAME, USAGE, "ERROR: no requested path")
    for path in requested:
        why = surface.token_problem(path)
        if why:
            return Verdict(NAME, USAGE, f"ERROR: {why}")
    items = [Item("COLLIDE", req, f"{owner} surface {token}")
             for req in requested for owner, tokens in against.items() for token in tokens
             if surface.overlap(req, token)]
    if items:
        return Verdict(NAME, ALTERNATIVE, f"SERIALIZE: {len(items)} collision(s) with concurrent surfaces", tuple(items))
    return Verdict(NAME, PASS, "WIDEN: requested paths are disjoint from every concurrent surface",
                   tuple(Item("WIDEN", req) for req in requested))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Compare paths a worker asks for with the surfaces of nodes that may run at the "
                       "same time.", {0: "WIDEN: no collision, the surface may grow",
                                      3: "SERIALIZE: a collision, the node must run alone",
                                      2: "no requested path, an invalid path, or an unusable DAG"}, prog,
        examples=(
            "orchestrate gate collision-check --path src/db.py --against-surfaces 'src/db/**,docs/db.md'",
            'orchestrate gate collision-check --dag .ledger/state/dag.yaml --node D2 --path README.md',
        ))
    p.add_argument("--path", action="append", help="a requested path (repeatable)")
    p.add_argument("--against-surfaces", action="append", default=[], metavar="TOK,TOK",
                   help="comma-separated surface tokens of concurrent nodes (repeatable)")
    p.add_argument("--dag", help="take the concurrent surfaces from this DAG ...")
    p.add_argument("--node", help="... for this node")

    def decide(a) -> Verdict:
        against: dict[str, list[str]] = {}
        for i, group in enumerate(a.against_surfaces, 1):
            against[f"surface {i}"] = [t.strip() for t in group.split(",") if t.strip()]
        if a.dag or a.node:
            if not (a.dag and a.node):
                raise UsageError("give both --dag and --node")
            dag = load_dag(a.dag)
            if a.node not in dag.by_id:
                raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
            against.update({n: list(dag.by_id[n].file_surface) for n in dag.concurrent_with(a.node)})
        return check(a.path or [], against)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
