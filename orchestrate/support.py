"""What `validate` accepts but this engine does not run yet: `run` refuses it up front, naming each place.

The DAG format (DESIGN §11) is ahead of the engine in two places: a node worked by a person
(`worker: {kind: human}`) and a discovery edge looking for a gate plugin. Both validate, so plans can be
written and checked now, but a run must never quietly run them some other way. Each entry here
disappears when the engine learns the feature.
"""
from __future__ import annotations

from gates.core.yamlfile import Problem

NODE_FEATURES = (  # (test, field, what)
    (lambda n: (n.worker_spec or {}).get("kind") is not None, "worker", "workers of kind human"),
)


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
        for test, fld, what in NODE_FEATURES:
            if test(n):
                found.append(Problem(dag.path, n.line, f"nodes.{n.id}.{fld}", "not-runnable",
                                     f"{what} validate, but this version of the engine cannot run them yet"))
        asks = n.worker_spec is not None or any(e.type == "discovery" for e in dag.incoming(n.id))
        if n.worker is None and not asks:
            found.append(Problem(dag.path, n.line, f"nodes.{n.id}.discipline", "no-worker",
                                 f"no command runs this node: map discipline `{n.discipline}` under `workers:` "
                                 "or set `worker:`"))
    return found
