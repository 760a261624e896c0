"""`orchestrate clean`: remove what ended campaigns left in the project (worktrees, node branches).

Only campaigns that have ended (accepted at final acceptance, or abandoned: `topics.ended`, the rule status
and abandon use); one that waits at final acceptance, or was refused there, has not. A node branch goes
only when its head is merged into the campaign's branch; every other one is kept, and said so, because
its head is recorded nowhere else. A worktree with uncommitted changes is kept too (a pooled spare is
not a node's: it always goes).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from orchestrate import git, git_files, removal
from orchestrate.errors import UsageError
from orchestrate.recorder import topics
from orchestrate.recorder.paths import Layout


@dataclass
class Plan:
    worktrees: list[str] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)  # branch -> sha, each merged
    kept: dict[str, str] = field(default_factory=dict)  # branch or worktree -> why it stays

    def to_json(self) -> dict:
        return {"worktrees": self.worktrees, "branches": self.branches, "kept": self.kept}


def ended(layout: Layout, topic: str | None) -> list[str]:
    marks = topics.lifecycle(layout.ledger)
    cut = _uncommitted(layout.ledger)
    if topic is None:
        return sorted(t for t in marks if t not in cut and topics.ended(layout.ledger, t))
    if topic in cut:  # an `abandon` killed before its commit: what its journal says has not happened
        raise UsageError(f"campaign {topic}'s journal holds entries the recorder has not committed (a command "
                         "was cut off)", hint=f"run it again (`orchestrate abandon --topic {topic} --note WHY`), "
                                              f"or `orchestrate resume --topic {topic}` to go on")
    if marks.get(topic) is None:
        raise topics.unknown(layout.ledger, topic)
    if marks.get(topic) != "close":
        raise UsageError(f"campaign {topic} is still in flight: clean removes only what ended campaigns left",
                         hint=f"`orchestrate abandon --topic {topic} --note WHY` ends it first")
    if not topics.ended(layout.ledger, topic):  # its branches are what a person is asked to accept
        raise UsageError(f"campaign {topic} has not ended: it waits at final acceptance, or was refused there; clean "
                         "removes only what ended campaigns left",
                         hint=f"`orchestrate decide final-acceptance accept --topic {topic}` accepts it (while it "
                              f"waits), `orchestrate abandon --topic {topic} --note WHY` ends it")
    return [topic]


def _uncommitted(ledger: Path) -> set[str]:
    """Topics whose journal (live file or segments) differs from the recorder's last commit."""
    changed = git.lines(ledger, "diff", "--name-only", "HEAD", "--", "state") + \
        git.lines(ledger, "ls-files", "--others", "--", "state")
    return {parts[1] for parts in (p.split("/") for p in changed) if len(parts) > 2 and parts[2].startswith("journal")}


def plan(layout: Layout, names: list[str]) -> Plan:
    p = Plan()
    root = layout.root
    listed = git.worktrees(root)
    common = git.git_common_dir(root)
    busy: set[str] = set()  # branches checked out in a worktree that stays
    for t in names:
        mine = [str(layout.worktrees(t)) + os.sep, str(layout.integration(t))]
        for entry in listed:
            path = entry["worktree"]
            if not (path.startswith(mine[0]) or path == mine[1]):
                continue
            spare = Path(path).parent.name == ".pool"  # a pooled copy (workers/pool.py): scratch, nobody's work
            if Path(path).is_dir() and not git_files.linked(Path(path), common):  # git would work where it names
                p.kept[path] = "its .git link names another repository or admin dir: look, then remove it by hand"
                busy.add(entry.get("branch", "").removeprefix("refs/heads/"))
            elif not spare and Path(path).is_dir() and git.status(path).stdout.strip():
                p.kept[path] = "worktree with uncommitted changes"
                busy.add(entry.get("branch", "").removeprefix("refs/heads/"))
            else:
                p.worktrees.append(path)
        # spares the pool could not remove (workers/pool.py), set aside in its folder: no worktree git lists
        p.worktrees += [str(path) for path in removal.set_aside_in(layout.worktrees(t) / ".pool")]
        campaign = git.rev_parse(root, f"refs/heads/campaign/{t}")
        for ref, sha in sorted(git.refs(root, f"refs/heads/node/{t}/").items()):
            branch = ref.removeprefix("refs/heads/")
            if branch in busy:
                p.kept[branch] = "checked out in a worktree that is kept"
            elif campaign and git.is_ancestor(root, sha, campaign):
                p.branches[branch] = sha
            else:
                p.kept[branch] = f"unmerged head {sha[:12]} (not in campaign/{t})"
    return p


def apply(layout: Layout, p: Plan) -> list[str]:
    """Remove what the plan lists; a branch that moved since it was judged merged is kept."""
    done = []
    for path in p.worktrees:
        git.worktree_remove(layout.root, path)
        if os.path.lexists(path):  # nested past what can be removed, or what its owner may not write
            p.kept[path] = "could not be removed: look, then remove it by hand"
        else:
            done.append(f"removed worktree {path}")
    git.worktree_prune(layout.root)
    for branch, sha in p.branches.items():
        if git.delete_branch(layout.root, branch, sha):
            done.append(f"deleted branch {branch} (merged at {sha[:12]})")
        else:
            p.kept[branch] = "moved while clean ran"
    return done
