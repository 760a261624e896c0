"""Every gate by its command name: the module that implements it and a one-line summary."""
from __future__ import annotations

import importlib

GATES: dict[str, tuple[str, str]] = {
    "authorize": ("gates.authorize", "every given path is covered by some node's surface"),
    "reconcile-node": ("gates.reconcile_node", "every path a node touched lies inside its own surface"),
    "collision-check": ("gates.collision_check", "requested paths vs concurrent surfaces: WIDEN (0) or SERIALIZE (3)"),
    "evaluators": ("gates.evaluators", "run a node's evaluators in its worktree, each rc recorded"),
    "premise": ("gates.premise", "re-check tripwires: FRESH (0) or INVALIDATED (1)"),
    "coherence": ("gates.coherence", "nothing points at removed paths; links resolve; DAG valid; project gates pass"),
    "adherence": ("gates.adherence", "campaign/<topic> holds only --no-ff merges of this campaign's nodes"),
    "close-check": ("gates.close_check", "the recorder closed the topic with a real Sufficiency Review"),
    "trial-merge": ("gates.trial_merge", "merge a node onto a ref in a throwaway worktree and run the checks"),
}


def module(name: str):
    return importlib.import_module(GATES[name][0])
