"""What `validate` accepts but this engine does not run yet: `run` refuses it up front, naming each place.

The DAG format (DESIGN §11) is ahead of the engine: typed edges validate completely, so plans can be
written and checked now, but a run must never quietly treat a conditional edge as static or a
LOOPS_WITH group as unrelated nodes. Each entry here disappears when the engine learns the feature.
"""
from __future__ import annotations

from gates.core.yamlfile import Problem

RUNS = {("TRIGGERS", "static"), ("PRODUCES", "static"), ("COMPOSES", "static"), ("EXTENDS", "static"),
        ("TRIGGERS", "conditional"), ("PRODUCES", "conditional")}
NODE_FEATURES = (  # (test, field, what)
    (lambda n: n.activation != "always", "activation", "on-demand nodes"),
    (lambda n: n.worker_spec is not None, "worker", "workers chosen by capability or kind"),
)


def gaps(dag) -> list[Problem]:
    """One problem per place the engine cannot run; [] when the whole DAG runs."""
    found = []
    for e in dag.edges:
        if (e.predicate, e.type) not in RUNS or e.guardrails:
            what = f"{e.type} {e.predicate} edges" if not e.guardrails else "guardrails on edges"
            found.append(Problem(dag.path, e.line, e.where, "not-runnable",
                                 f"{what} validate, but this version of the engine cannot run them yet"))
    for n in dag.nodes:
        if n.complete:
            continue
        for test, fld, what in NODE_FEATURES:
            if test(n):
                found.append(Problem(dag.path, n.line, f"nodes.{n.id}.{fld}", "not-runnable",
                                     f"{what} validate, but this version of the engine cannot run them yet"))
        if n.worker is None and n.worker_spec is None:
            found.append(Problem(dag.path, n.line, f"nodes.{n.id}.discipline", "no-worker",
                                 f"no command runs this node: map discipline `{n.discipline}` under `workers:` "
                                 "or set `worker:`"))
    return found
