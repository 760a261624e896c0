"""Conflicts found early: when the campaign head moves, every landed node still waiting for its turn is
trial-merged onto the new head (`git merge-tree --write-tree`: no checkout, milliseconds), so a conflict
is known before the node is judged and merged.
Under the eager schedule a node that lands after the head moved past its base (it had not landed when it
moved) is probed as it lands, before its evaluators run ahead (`on_landing`), or else first thing in
RECONCILE, so those too are probed before they are judged.

Each probe is journalled (`probe`: the node, its judged head, the head it was merged onto, the nodes
merged since that judged head was last known clean that could conflict with it, clean or not, the
conflicting paths). A node that no merge since could conflict with is not probed (`_could_conflict`).
A conflicting node is reworked at once from the new head, its next brief naming the paths and the merged node(s) it
conflicts with; a LOOPS_WITH group lands as one, so it is reworked as one, as MERGE does.

The early rework counts against the node's attempts, as the same conflict found at MERGE does. It is no
more the worker's fault there than here, but it is the same conflict (the same merge machinery on the
same two commits): counting it alike means a node spends the same attempts whichever step finds it, and
the attempt budget still bounds a node that a moving head sends back again and again. Giving up stays
MERGE's decision: a node (or group) whose conflict would spend its last attempt is not reworked here; its
conflict stays pending (status shows it), it is judged in its turn, and MERGE refuses it and escalates
(or abandons it) as before. A node an open seam asks about (review-divergence) is left to that seam's
answer too: reworked under it, an accept found no landed node to merge (rv77). So the transition table is unchanged: CHECKPOINT goes on as it did, and
DISPATCH picks the REWORK nodes up (schedule.to_dispatch).
"""
from __future__ import annotations

from gates.shared.verdict import ALTERNATIVE, Item, Verdict
from orchestrate import git
from orchestrate.engine import evaluations, judge, schedule
from orchestrate.errors import GitError
from orchestrate.recorder.campaign import LANDED, REWORK

_unable: set[str] = set()  # repositories whose git cannot probe (said once, not asked again)


def after_merge(ctx) -> list[str]:
    """Probe each landed node not yet probed at its judged head against the campaign head, journal every
    result, and rework the conflicting ones now. Returns the nodes sent to rework."""
    c = ctx.campaign
    if str(ctx.root) in _unable:
        return []
    found = []  # the probe entries that found a conflict
    for node_id in _due(ctx):
        entry = _probe(ctx, node_id)
        if str(ctx.root) in _unable:
            return []
        if entry is not None:
            found.append(entry)
    reworked: list[str] = []
    judging = set(evaluations.in_flight(ctx))  # its worktree is in use: MERGE finds the conflict in its turn
    asked = schedule.held(ctx)  # a seam asks a person about it (review-divergence): the answer settles it
    fresh = {entry["context"]["node"] for entry in found}
    for entry in found + _left(ctx, fresh):
        node_id = entry["context"]["node"]
        group = set(ctx.dag.group_of(node_id))
        if c.nodes[node_id].status != LANDED or judging & group:  # reworked with its group already, or judged
            continue
        if asked & group:  # an accept merges its judged head, so MERGE finds the conflict and reworks it then
            if node_id in fresh:
                ctx.out.line(f"{node_id}: conflict found before its turn ({', '.join(entry['context']['conflicts'])}); "
                             "not reworked now, as a seam asks about it: its answer comes first")
            continue
        reworked += _rework(ctx, entry, said=node_id in fresh)
    return reworked


def on_landing(ctx, node_id: str) -> None:
    """Probe a node just landed when a merge moved the campaign head past its base while it ran (the probes
    at that merge could not see it): before its evaluators run ahead, not after (see `starts_again`)."""
    if str(ctx.root) not in _unable and _due(ctx, (node_id,)):
        _probe(ctx, node_id)


def starts_again(ctx, node_id: str) -> bool:
    """Is this landed node's judged head known to conflict with the campaign head, so that RECONCILE reworks
    it (from `_left`)? Its evaluators then need not run ahead. Not when the rework would spend its last
    attempt: it is judged in its turn and MERGE decides, as before."""
    c = ctx.campaign
    ns, last = c.nodes[node_id], c.probes.get(node_id)
    return (last is not None and not last["clean"] and last["onto"] == c.tip and last["head"] == ns.head
            and len(ctx.dag.group_of(node_id)) == 1
            and judge.next_verdict(ctx.dag.by_id[node_id], ns.failures + 1) == "rework")


def _probe(ctx, node_id: str) -> dict | None:
    """Trial-merge one landed node's judged head onto the campaign head: the journalled probe when it
    conflicts, else None (clean, or no merge since could conflict with it, or this git cannot probe)."""
    c, ns = ctx.campaign, ctx.campaign.nodes[node_id]
    merged = _could_conflict(ctx, node_id, merged_since(c, _clean_at(ctx, node_id)))
    if not merged:  # known clean without a merge: remembered by this runner, not journalled
        ctx.known_clean[node_id] = (ns.head, c.tip)
        return None
    trial = git.merge_tree(ctx.root, c.tip, ns.head)
    if trial is None:
        _unable.add(str(ctx.root))
        ctx.out.line("this git has no `merge-tree --write-tree` (git 2.38 or later): conflicts are found "
                     "when each node merges, not before its turn")
        return None
    conflicts = trial[1]
    if not conflicts:
        ctx.known_clean[node_id] = (ns.head, c.tip)
    entry = ctx.emit("probe", {"node": node_id, "head": ns.head, "onto": c.tip, "merged": merged,
                               "clean": not conflicts, "conflicts": conflicts},
                     derived_from=[c.nodes[m].settled_entry for m in merged if c.nodes[m].settled_entry])
    return entry if conflicts else None


def _left(ctx, fresh: set[str]) -> list[dict]:
    """The conflicts an earlier probe found at this very head and judged head that nothing acted on (the node's
    evaluators were running ahead then, rv77): acted on as if found now, once they have ended. One left for a
    last attempt or a seam's answer stays left, and is not said again."""
    c = ctx.campaign
    keys = ("head", "onto", "clean", "conflicts", "merged")
    return [{"id": p["entry"], "context": {"node": n, **{k: p[k] for k in keys}}}
            for n, p in c.conflicts.items() if n not in fresh and p["onto"] == c.tip
            and c.nodes[n].status == LANDED and p["head"] == c.nodes[n].head]


def _due(ctx, among=None) -> list[str]:
    """Landed nodes, of every layer (or `among` those), whose judged head may conflict with the campaign head
    and has not been probed against it. A worker that failed is left to RECONCILE (which tells a failing
    environment from a failing attempt); a node that branched from this very head, or changed nothing, cannot
    conflict."""
    c = ctx.campaign
    due = []
    for node_id in c.nodes if among is None else among:
        ns = c.nodes[node_id]
        if ns.status != LANDED or ns.rc not in (0, None) or ns.head in (ns.base, "") or ns.base == c.tip:
            continue
        last = c.probes.get(node_id)
        if ctx.known_clean.get(node_id) == (ns.head, c.tip) or \
                (last and last["head"] == ns.head and last["onto"] == c.tip):
            continue
        due.append(node_id)
    return due


def _could_conflict(ctx, node_id: str, merged: list[str]) -> list[str]:
    """Which of the `merged` nodes (merged since this node's head was last known clean) could conflict with
    it? Not one where neither side deletes a file and no path one side changed is, or lies under, a path the
    other changed: git's merge then takes each side's files as they are (a deletion could be half of a
    rename, and renames and directory renames move the other side's changes). When none could, the node is
    not probed (both diffs are known from judging): a layer of L nodes landing together would otherwise cost
    L*L/2 merges and as many journal entries. A conflict this could miss is still MERGE's to find: the
    probe only finds conflicts early."""
    c = ctx.campaign
    mine = _touched(ctx, c.nodes[node_id])
    if mine is None:
        return merged
    return [m for m in merged if (theirs := _touched(ctx, c.nodes[m])) is None
            or _overlap(mine, theirs) or _overlap(theirs, mine)]


def _touched(ctx, ns) -> set[str] | None:
    """The paths a node's judged head changed, None when it deleted one (or its diff cannot be read)."""
    if not ns.base or not ns.head:
        return None
    try:
        changes = git.changed_paths(ctx.root, ns.base, ns.head)
    except GitError:
        return None
    return None if any(status == "D" for status, _ in changes) else {path for _, path in changes}


def _overlap(paths: set[str], other: set[str]) -> bool:
    """Is a path of `paths` also in `other`, or a folder holding one of `other`'s?"""
    if paths & other:
        return True
    folders = {p[:i] for p in other for i, ch in enumerate(p) if ch == "/"}
    return bool(paths & folders)


def _clean_at(ctx, node_id: str) -> str:
    """The campaign head this node's judged head was last known clean against (this runner remembers both
    clean probes and heads no merge since could conflict with; after a resume, the journal's last clean
    probe), else its base: what merged after it is what the head can conflict with."""
    ns = ctx.campaign.nodes[node_id]
    head, onto = ctx.known_clean.get(node_id, ("", ""))
    if head == ns.head:
        return onto
    last = ctx.campaign.probes.get(node_id)
    return last["onto"] if last and last["clean"] and last["head"] == ns.head else ns.base


def merged_since(c, head: str) -> list[str]:
    """The nodes whose merges moved the campaign head on from `head` (the baseline or a merge commit),
    oldest first, from the recorded merges alone (no git). A head the campaign never had yields every
    merged node: too many named is better than the culprit left out."""
    order = c.merged
    start = max((i + 1 for i, n in enumerate(order) if c.nodes[n].merge == head), default=0)
    return [n for n in order[start:] if c.nodes[n].head != c.nodes[n].base]  # an empty merge moved nothing


def _rework(ctx, entry: dict, said: bool = True) -> list[str]:
    """Send the conflicting node (with the landed members of its LOOPS_WITH group) back to work from the
    campaign head, unless that would spend a member's last attempt: then MERGE decides, as before."""
    c, cx = ctx.campaign, entry["context"]
    node_id = cx["node"]
    members = [m for m in ctx.dag.group_of(node_id) if c.nodes[m].status == LANDED]
    what = f"{', '.join(cx['conflicts'])} with {_named(cx['merged'])}"
    found = f"conflict found before its turn ({what})"
    if any(judge.next_verdict(ctx.dag.by_id[m], c.nodes[m].failures + 1) != "rework" for m in members):
        if not said:
            return []
        ctx.out.line(f"{node_id}: {found}; not reworked now, as that would spend a last attempt: MERGE "
                     "refuses it in its turn and escalates it (or abandons it) as before")
        return []
    feedback = judge.failure_text([_verdict(cx, members)])
    for m in members:
        ns = c.nodes[m]
        failures = ns.failures + 1
        ctx.emit("node", {"node": m, "status": REWORK, "failures": failures, "feedback": feedback,
                          "verdict": "rework"}, derived_from=[entry["id"]])
        why = found if m == node_id else f"its LOOPS_WITH peer {node_id} conflicts ({what})"
        ctx.out.line(f"{m}: {why}; REWORK from {c.tip[:12]} "
                     f"({judge.attempt_text(ns.attempt, failures, judge.budget(ctx.dag.by_id[m]))})")
    return members


def _verdict(cx: dict, members: list[str]) -> Verdict:
    """What the next brief says: the conflicting paths, the node(s) whose merge they conflict with, and
    that the attempt starts again from the head that holds those merges."""
    node_id, paths, merged = cx["node"], cx["conflicts"], _named(cx["merged"])
    summary = (f"CONFLICT: {node_id}'s judged head {cx['head'][:12]} conflicts with the campaign head "
               f"{cx['onto'][:12]} (after the merge of {merged}) in {', '.join(paths)}; the next attempt "
               f"starts from that head, which holds {merged}'s work")
    group = [m for m in members if m != node_id]
    if group:
        summary += f"; its LOOPS_WITH group lands as one, so {', '.join(group)} start(s) again with it"
    items = tuple(Item("CONFLICT", p, f"with the merge of {merged}") for p in paths)
    return Verdict("trial-merge", ALTERNATIVE, summary, items)


def _named(nodes: list[str]) -> str:
    if not nodes:
        return "earlier nodes"
    return ("node " if len(nodes) == 1 else "nodes ") + ", ".join(nodes)

