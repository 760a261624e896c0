"""Finding the project's recorder and reading a campaign back from its journal (no engine imports)."""
from __future__ import annotations

from pathlib import Path

from orchestrate import git
from orchestrate.errors import UsageError
from orchestrate.recorder import segments, topics
from orchestrate.recorder.campaign import Campaign, apply
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.paths import Layout


def project(cwd: Path) -> Layout:
    layout = Layout(checkout(cwd))
    if not (layout.ledger / ".git").is_dir():
        raise UsageError(f"no recorder at {layout.ledger}", hint="run `orchestrate init` first")
    return layout


def load(layout: Layout, topic: str) -> tuple[Campaign, Recorder]:
    """Fold the topic's journal into its campaign state."""
    recorder = Recorder(layout.ledger, topic)
    entries = recorder.read()
    if not entries:
        raise topics.unknown(layout.ledger, topic)
    campaign = Campaign()
    for entry in entries:
        apply(campaign, entry)
    recorder.resume_seq(entries)
    return campaign, recorder


def peek(layout: Layout, topic: str) -> Campaign:
    """The campaign state for reading only (`status`): the newest checkpoint that matches the journal,
    plus the entries after it; nothing is repaired or written. Falls back to folding the whole journal."""
    from orchestrate.recorder import checkpoints
    journal = Recorder(layout.ledger, topic).journal
    lines = segments.read_bytes(journal).splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()  # torn by a crash mid-write: resume settles it; a reader ignores it
    from orchestrate.recorder import damage
    lines = damage.sound(lines)  # a line orchestrate did not write is reported (damage.describe), not folded
    if not lines:
        raise topics.unknown(layout.ledger, topic)
    return checkpoints.restore(layout.checkpoints(topic), topic, lines, lambda _message: None)[0]


def checkout(cwd: Path) -> Path:
    """The main checkout of the repository here; a bare repository is told apart from no repository. In the
    recorder (`cd .ledger/state` to edit the DAG), the project's: the recorder is a repository too, and taken for
    the project it would get a recorder of its own and campaigns run on it. A recorder is told by its files and
    by the project's exclude, where `init` lists it."""
    top = git.main_worktree(cwd)  # a bare repository is told apart there
    if top.name == ".ledger" and (top / "config.yaml").is_file() and (top / "state").is_dir():
        try:
            outer = git.main_worktree(top.parent)
        except UsageError:
            return top
        # `init` excluded it there: its recorder, not a repository of the user's own that is called so (a
        # ~/.ledger in a dotfiles checkout)
        from orchestrate.recorder.init import excluded
        if outer / ".ledger" == top and ".ledger" in excluded(outer):
            return outer
    return top
