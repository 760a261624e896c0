"""BOUNDARY: coherence over the layer's cumulative diff, and a check that nobody edited the DAG meanwhile."""
from __future__ import annotations

from gates import coherence
from orchestrate.engine import judge
from orchestrate.engine.context import Context, file_hash
from orchestrate.engine.states import Outcome
from orchestrate.seams.choices import CHOICES
from orchestrate.workers import worktrees


def handle(ctx: Context) -> Outcome:
    c = ctx.campaign
    integ = worktrees.integration(ctx)
    verdict = coherence.check(ctx.root, c.layer_base, c.tip, ledger=ctx.layout.ledger, dag_path=ctx.dag_file,
                              topic=c.topic, worktree=integ, brief_dir=ctx.brief_dir)
    entry = judge.record(ctx, None, verdict)
    ctx.subject = f"layer {c.k}"
    if verdict.code != 0:
        orphans = [i.line() for i in verdict.failing()]
        ctx.halt_reason = (f"layer {c.k} is incoherent: {verdict.summary}\n" + "\n".join(f"  {o}" for o in orphans)
                           + "\nfix the references on a node (or amend the DAG), then `orchestrate resume`")
        ctx.emit("halt", {"reason": ctx.halt_reason}, derived_from=[entry["id"]])
        return Outcome.INCOHERENT
    current = file_hash(ctx.dag_file)
    if current != c.dag_hash:
        ctx.emit("seam", {"seam": "dag-amendment", "node": None, "choices": list(CHOICES["dag-amendment"]),
                          "bound_to": c.tip, "reason": f"{ctx.dag_file} changed since it was last validated",
                          "show": dag_changes(ctx), "dag_hash": current}, derived_from=[entry["id"]])
        return Outcome.AMENDED
    if c.k + 1 < len(c.layers):
        ctx.emit("layer", {"k": c.k + 1, "tip": c.tip})
        return Outcome.NEXT_LAYER
    return Outcome.LAST_LAYER


def dag_changes(ctx: Context) -> list[str]:
    """Which nodes and dependency edges the edit added, removed or changed."""
    from orchestrate.dag.load import check_dag
    old = _validated(ctx) or ctx.dag
    new, problems = check_dag(ctx.dag_file, topic=ctx.topic, brief_dir=ctx.brief_dir)
    if new is None:
        return [f"the edited DAG is invalid: {problems[0]}" if problems else "the edited DAG is invalid"]
    lines = []
    for n in sorted(set(new.by_id) - set(old.by_id)):
        lines.append(f"added node {n}")
    for n in sorted(set(old.by_id) - set(new.by_id)):
        lines.append(f"removed node {n}")
    for n in sorted(set(old.by_id) & set(new.by_id)):
        if old.by_id[n] != new.by_id[n]:
            lines.append(f"changed node {n}")
    old_edges = {(d, n.id) for n in old.nodes for d in n.depends_on}
    new_edges = {(d, n.id) for n in new.nodes for d in n.depends_on}
    lines += [f"added edge {a} -> {b}" for a, b in sorted(new_edges - old_edges)]
    lines += [f"removed edge {a} -> {b}" for a, b in sorted(old_edges - new_edges)]
    return lines or ["only formatting or comments changed"]


def _validated(ctx: Context):
    """The DAG as it was when last validated: the recorder version whose hash the journal holds."""
    import hashlib

    from orchestrate import git
    from orchestrate.dag import yamlfile
    from orchestrate.dag.validate import validate
    rel = str(ctx.dag_file.relative_to(ctx.layout.ledger))
    for sha in git.lines(ctx.layout.ledger, "log", "--format=%H", "--", rel):
        text = git.show_file(ctx.layout.ledger, sha, rel)
        if text is not None and hashlib.sha256(text.encode()).hexdigest() == ctx.campaign.dag_hash:
            data, _ = yamlfile.load(text, rel)
            dag, _ = validate(data, rel, topic=ctx.topic, brief_dir=ctx.brief_dir)
            return dag
    return None
