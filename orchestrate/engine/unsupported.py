"""What `validate` accepts but this engine does not run: `run` refuses it up front, naming each place.

The DAG format (DESIGN §11) allows a discovery edge of `kind: gate` or `any`, mirroring the seed; but
what a discovery edge finds is the worker that runs its target, and a gate plugin cannot run a node.
It validates, so such a plan can be written and checked, but a run must never quietly run it some
other way. A node that no command, worker plugin or person can run is refused here too, and so is a node's
`worker: {fallback_worker: ...}` (seeds-other §3.4's "simpler alternative"), which nothing here carries out.
"""
from __future__ import annotations

from orchestrate.dag.yamlfile import Problem


def gaps(dag) -> list[Problem]:
    """One problem per place the engine cannot run; [] when the whole DAG runs."""
    found = []
    for e in dag.edges:
        if e.type == "discovery" and (e.discover or {}).get("kind") == "gate":
            found.append(Problem(dag.path, e.key_line("discover"), f"{e.where}.discover.kind", "not-runnable",
                                 "a discovery edge finds the worker that runs its target, and a gate plugin cannot "
                                 "run a node; use kind: worker"))
    for n in dag.nodes:
        if n.complete:
            continue
        if "fallback_worker" in (n.worker_spec or {}):  # was ignored: no match halted saying no fallback is declared
            found.append(Problem(dag.path, n.line, f"nodes.{n.id}.worker.fallback_worker", "not-runnable",
                                 "this engine has no fallback worker: when no plugin provides the capabilities, the "
                                 "node's discovery edge's `fallback:` node runs instead; give the node an incoming "
                                 "`type: discovery` edge with `fallback: <an on_demand node>`, or drop fallback_worker"))
        asks = n.worker_spec is not None or any(e.type == "discovery" for e in dag.incoming(n.id))
        if n.worker is None and not asks:
            found.append(Problem(dag.path, n.line, f"nodes.{n.id}.discipline", "no-worker",
                                 f"no command runs this node: map discipline `{n.discipline}` under `workers:` "
                                 "or set `worker:`"))
    return found
