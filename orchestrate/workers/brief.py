"""A node's brief and environment: the dispatch header, then the node's own brief text."""
from __future__ import annotations

from pathlib import Path

from orchestrate import inert
from orchestrate.dag.model import Node
from orchestrate.errors import UsageError
from orchestrate.workers.local import WIDEN_LIMIT


def brief_text(node: Node, *, topic: str, attempt: int, worktree: Path, branch: str, base: str,
               return_file: Path, brief_dir: Path | None, feedback: str = "", checks=None,
               plugin_gates: tuple[str, ...] = (), related: tuple[tuple[Node, str], ...] = ()) -> str:
    """`checks` are the command checks that judge the node (its own and, through COMPOSES and LOOPS_WITH,
    others'); default: its own evaluators. `plugin_gates` are the gates plugins run on it. `related` are
    (node, how) whose briefs this worker reads but does not do: its LOOPS_WITH peers, its COMPOSES spokes."""
    own = _own_text(node, brief_dir)
    surface = "\n".join(f"  - {t}" for t in node.file_surface) or "  (none: this node may change nothing)"
    evaluators = "\n".join([f"  - {e.name}: `{e.run}`" for e in (node.evaluators if checks is None else checks)]
                           + [f"  - {g}: run by a gate plugin after you return" for g in plugin_gates]) or "  (none)"
    tripwires = "\n".join(f"  - `{t.run}` must exit {t.expect}" + (f" ({t.why})" if t.why else "")
                          for t in node.tripwires) or "  (none)"
    parts = [
        f"# Node {node.id}: {node.title} (campaign {topic}, attempt {attempt})",
        "",
        "## Dispatch header",
        "",
        f"- Work only in this worktree: {worktree}",
        f"- Your branch is `{branch}`; check with `git branch --show-current` before you start.",
        f"- Your base commit is {base}; `git merge-base --is-ancestor {base} HEAD` must succeed.",
        "- If any of these is not so, stop and report it instead of working elsewhere.",
        "- Commit your work on this branch at every logical step; never push, never rewrite history.",
        "- Run evaluators yourself and read their exit codes directly (never through a pipe).",
        "- You may change only these paths (your surface):",
        surface,
        "- Your work is accepted only when these evaluators exit 0 in your worktree:",
        evaluators,
        "- Premises this work relies on:",
        tripwires,
        "",
        "## How to freeze",
        "",
        f"Write one JSON object to {return_file} and exit 0 when you must stop:",
        '- a path outside your surface is needed: {"freeze": "surface-exceed", "paths": ["path", ...]}',
        f"  (ask for every path at once: a node's surface is widened at most {WIDEN_LIMIT} times, and a request "
        "naming nothing outside it fails the attempt)",
        '- a premise above is false: {"freeze": "refuted-premise", "premise": "...", "evidence": "..."}',
        '- a decision belongs to a human: {"freeze": "reserved-halt", "reason": "..."}',
        "Do not touch a path outside your surface before you freeze for it.",
    ]
    if node.outputs:
        parts += ["", "## Outputs", "",
                  f"Write one JSON object with the keys {', '.join(node.outputs)} to "
                  f"{outputs_path(return_file.parent, attempt)} ($ORCH_OUTPUTS); later edges decide on these values."]
    if feedback:
        parts += ["", "## Why the previous attempt was not accepted", "", feedback]
    parts += ["", "## Brief", "", own.strip() or "(no brief text)", ""]
    for other, how in related:
        parts += [f"## Brief of {other.id} ({how}; read only, not your work)", "",
                  _own_text(other, brief_dir).strip() or "(no brief text)", ""]
    return "\n".join(parts)


def _own_text(node: Node, brief_dir: Path | None) -> str:
    if node.brief_file:
        from orchestrate.dag.node_rules import brief_problem, looked_in
        path = (brief_dir or Path(".")) / node.brief_file
        # changed since the DAG was validated; a campaign's brief_dir is the folder recorded when it opened
        if why := brief_problem(path, looked_in(brief_dir)):
            raise UsageError(f"{path}: node {node.id}'s brief_file {why}",
                             hint="fix the file, then `orchestrate resume` (nothing was started)")
        return path.read_text(encoding="utf-8")
    return node.brief


def worker_env(node: Node, *, topic: str, attempt: int, worktree: Path, branch: str, base: str,
               brief: Path, return_file: Path) -> dict[str, str]:
    return {
        "ORCH_TOPIC": topic, "ORCH_NODE": node.id, "ORCH_ATTEMPT": str(attempt),
        "ORCH_WORKTREE": str(worktree), "ORCH_BRANCH": branch, "ORCH_BASE": base,
        "ORCH_BRIEF": str(brief), "ORCH_SURFACE": "\n".join(node.file_surface), "ORCH_RETURN": str(return_file),
        "ORCH_OUTPUTS": str(outputs_path(return_file.parent, attempt)),
        "ORCH_USAGE": str(usage_path(return_file.parent, attempt)),
        **git_settings(),
    }


# A worker's commit must not start `git gc --auto` (nor `git maintenance run --auto`) in the user's repository:
# it prunes the user's unreachable objects and expires their reflogs, and its repack, running behind the
# worker, makes orchestrate's own writes there fail (git_pipe.py).
_GIT_SETTINGS = (("gc.auto", "0"), ("maintenance.auto", "false"))


def git_settings() -> dict[str, str]:
    """_GIT_SETTINGS after the git settings the worker inherits from this process (a remote machine makes its
    own: workers/remote.py)."""
    return inert.appended(_GIT_SETTINGS)


def usage_path(run_dir: Path, attempt: int) -> Path:
    """Where a worker may report what it spent: `{"usage": {...}}`, read and journalled after the attempt."""
    return run_dir / f"usage-{attempt}.json"


def outputs_path(run_dir: Path, attempt: int) -> Path:
    """Where a worker writes its declared outputs: a JSON object, next to its freeze file (never in the tree)."""
    return run_dir / f"outputs-{attempt}.json"
