"""Adherence: after the baseline, campaign/<topic> holds only --no-ff merges of this campaign's own node commits."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Collection

from gates.shared import gatecli
from gates.shared.verdict import FAIL, PASS, Item, Verdict, usage
from orchestrate import git, git_batch
from orchestrate.dag.schema import topic_problem
from orchestrate.errors import ProcError, UsageError

GATE = "adherence"

RULES = """\
Every commit on the first-parent chain of campaign/<topic> after the baseline must be a merge whose
second (and any further) parent is a node commit of this campaign:

  DIRECT   a non-merge commit on the chain (made on the campaign branch, or a fast-forward); it fails
           even when later node branches, forked from the campaign tip, contain it.
  FOREIGN  a merge of anything that is not a node commit of <topic> (feature/x, node/other/N1, ...).
  FORGED   with --merge-commit, a merge that is not one of the given commits (the ones the engine's
           journal records making), whatever its parents.

Node commits are, with --node-head, exactly the recorded heads (the commits the engine judged and
merged; a node branch ref is then ignored). Without it, they are the commits a tip of
refs/heads/node/<topic>/* adds to the campaign: reachable from the tip but not from its fork point (the
newest commit of the campaign's first-parent chain, or the baseline, that the tip contains). Work that
reached the campaign before a node was forked is therefore never credited to that node.

The integration ref must be the branch campaign/<topic>, and the baseline an ancestor of it."""


def check(repo: Path, topic: str, baseline: str, *, campaign_ref: str | None = None,
          node_heads: Collection[str] | None = None, merge_commits: Collection[str] | None = None) -> Verdict:
    """Audit campaign/<topic> (or `campaign_ref`) after `baseline`; bad refs or topic give code 2.

    With `merge_commits` (the merge commits the engine's journal records making), any other merge on the
    chain is FORGED, even one whose parents are node commits: a worker can make such a merge itself."""
    try:
        return _audit(Path(repo), topic, baseline,
                      f"campaign/{topic}" if campaign_ref is None else campaign_ref, node_heads,
                      None if merge_commits is None else set(merge_commits))
    except (UsageError, ProcError) as exc:
        return usage(GATE, str(exc))


def _audit(repo: Path, topic: str, baseline: str, ref: str, node_heads: Collection[str] | None,
           made: set[str] | None) -> Verdict:
    problem = topic_problem(topic or "")
    if problem:
        raise UsageError(problem)
    root = git.toplevel(repo)
    base = git.resolve(root, baseline)
    head = git.resolve(root, ref)
    if isinstance(node_heads, str):  # one sha, not a collection of its characters
        node_heads = [node_heads]
    recorded = None if node_heads is None else {git.resolve(root, h) for h in node_heads}
    data: dict = {"topic": topic, "campaign": ref, "baseline": base, "head": head,
                  "node_commits": "recorded heads" if recorded is not None else f"refs/heads/node/{topic}/*",
                  "merges": [], "offenders": []}
    items: list[Item] = []
    problems: list[str] = []

    wrong_ref = _not_the_campaign_branch(root, ref, topic)
    if wrong_ref:
        items.append(Item("FAIL", "integration ref", wrong_ref))
        problems.append(f"{ref} is not campaign/{topic}")
    # The engine audits what was merged since its last audit: the baseline a few first parents down.
    chain = git_batch.first_parents(root, base, head)
    if chain is None and not git.is_ancestor(root, base, head):
        # without a common line the range would be arbitrary history, so nothing below is meaningful
        items.append(Item("FAIL", "baseline", f"{base[:12]} is not an ancestor of {ref} ({head[:12]})"))
        problems.append("the baseline is not an ancestor of the campaign head")
        return Verdict(GATE, FAIL, "FAIL: " + "; ".join(problems), tuple(items), data)

    if chain is None:
        chain = _first_parent_chain(root, base, head)
    if not chain:
        items.append(Item("INFO", "no commits after the baseline"))
    has_merges = any(len(parents) > 1 for _, parents, _ in chain)
    nodes: set[str] = set()
    if recorded is not None:
        nodes = recorded
    elif has_merges:
        tips = [sha for _, sha in sorted(git.refs(root, f"refs/heads/node/{topic}/").items())]
        if not tips:
            items.append(Item("INFO", f"no node/{topic}/* branches", "so no merge can be of a node commit"))
        nodes = _owned_by_nodes(root, base, [sha for sha, _, _ in chain], tips)

    for sha, parents, subject in chain:
        what = f"{sha[:12]}  {subject}"
        if len(parents) < 2:
            items.append(Item("DIRECT", what, "not a merge"))
            data["offenders"].append(sha)
            continue
        foreign = [p for p in parents[1:] if p not in nodes]
        if made is not None and sha not in made:
            items.append(Item("FORGED", what, "a merge the journal does not record orchestrate making"))
            data["offenders"].append(sha)
        elif foreign:
            names = ", ".join(p[:12] for p in foreign)
            verb = "is not a node commit" if len(foreign) == 1 else "are not node commits"
            items.append(Item("FOREIGN", what, f"merges {names} which {verb} of {topic}"))
            data["offenders"].append(sha)
        else:
            items.append(Item("OK", what))
            data["merges"].append(sha)

    offenders = len(data["offenders"])
    if offenders:
        named = [f"{i.status} {i.subject}" for i in items if i.status in ("DIRECT", "FOREIGN", "FORGED")]
        more = f" and {len(named) - 3} more" if len(named) > 3 else ""
        problems.append(f"{offenders} commit(s) break adherence ({'; '.join(named[:3])}{more})")
    if problems:
        return Verdict(GATE, FAIL, "FAIL: " + "; ".join(problems), tuple(items), data)
    if not chain:
        return Verdict(GATE, PASS, "PASS: 0 merge(s); no commits after the baseline", tuple(items), data)
    return Verdict(GATE, PASS, f"PASS: {len(data['merges'])} merge(s), all of this campaign's nodes",
                   tuple(items), data)


def _not_the_campaign_branch(root: Path, ref: str, topic: str) -> str | None:
    """Why `ref` is not the branch campaign/<topic>, or None when it is."""
    if ref == f"campaign/{topic}" and git_batch.is_branch(root, ref):
        return None
    full = git.out(root, "rev-parse", "--symbolic-full-name", ref, check=False)
    if full == f"refs/heads/campaign/{topic}":
        return None
    if full.startswith("refs/heads/"):
        return f"`{ref}` is the branch {full.removeprefix('refs/heads/')}, not campaign/{topic}"
    if not full or full == "HEAD":
        return f"`{ref}` is not a branch (a bare or detached commit), not campaign/{topic}"
    return f"`{ref}` is {full}, not the branch campaign/{topic}"


def _first_parent_chain(root: Path, base: str, head: str) -> list[tuple[str, list[str], str]]:
    """[(sha, parents, subject)] of the first-parent chain after `base`, oldest first."""
    rows = []
    for ln in git.lines(root, "log", "--no-show-signature", "--first-parent", "--reverse",
                        "--format=%H %P%x1f%s", f"{base}..{head}"):
        shas, _, subject = ln.partition("\x1f")
        sha, *parents = shas.split()
        rows.append((sha, parents, subject))
    return rows


def _owned_by_nodes(root: Path, base: str, chain: list[str], tips: list[str]) -> set[str]:
    """Every commit some node tip adds after its fork point (the newest chain commit the tip contains).

    This is what closes the laundering hole: a node forked from a tip that already holds a foreign merge
    or a direct commit contains that work, but does not own it.
    """
    owned: set[str] = set()
    for tip in tips:
        reach = git.lines(root, "rev-list", tip, f"^{base}")
        inside = set(reach)
        fork = next((c for c in reversed(chain) if c in inside), None)
        owned.update(reach if fork is None else git.lines(root, "rev-list", tip, f"^{fork}"))
    return owned


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(GATE, __doc__ + "\n\n" + RULES, {
        0: "pass: every commit after the baseline is a merge of this campaign's node commits",
        1: "fail: a direct commit, a foreign merge, a wrong integration ref, or a baseline off the branch",
        2: "usage: an unknown ref, baseline or node head, an invalid topic, or not a git repository",
    }, prog,
        examples=(
            'orchestrate gate adherence --topic demo --base main',
            'orchestrate gate adherence --topic demo --base main --campaign campaign/demo --json',
        ))
    p.add_argument("--topic", required=True, help="the campaign's topic")
    p.add_argument("--base", required=True, metavar="REV", help="the campaign's baseline commit")
    p.add_argument("--campaign", metavar="REF", help="the integration ref (default campaign/<topic>)")
    p.add_argument("--repo", metavar="DIR", default=".", help="the project repository (default: here)")
    p.add_argument("--node-head", metavar="SHA", action="append", dest="node_heads",
                   help="a recorded node head (repeatable); when given, only these count as node commits")
    p.add_argument("--merge-commit", metavar="SHA", action="append", dest="merge_commits",
                   help="a merge commit the engine recorded making (repeatable); when given, only these may "
                        "be merges on the chain")
    return gatecli.run_gate(p, argv, _decide)


def _decide(args: argparse.Namespace) -> Verdict:
    return check(Path(args.repo), args.topic, args.base, campaign_ref=args.campaign, node_heads=args.node_heads,
                 merge_commits=args.merge_commits)


if __name__ == "__main__":
    raise SystemExit(main())
