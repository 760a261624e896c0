"""`orchestrate abandon`: a person ends a campaign for good, so nothing stays in flight for ever.

Recorded as a human decision (who, when, why) followed by the campaign's `close` entry: `resume`
without --topic no longer picks it, and `orchestrate clean` may remove what it left. Its branches stay.
"""
from __future__ import annotations

from pathlib import Path

from orchestrate.errors import Halted, UsageError
from orchestrate.recorder import sketch, topics
from orchestrate.recorder.journal import Recorder
from orchestrate.recorder.locate import project
from orchestrate.recorder.lock import CampaignLock
from orchestrate.report.live import Reporter


def abandon(cwd: Path, *, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    from orchestrate.engine import resume
    from orchestrate.engine.context import Context
    from orchestrate.seams import choices as seams
    from orchestrate.workers.local import LocalExecutor
    layout = project(cwd)
    # the rule resume and decide use: a campaign waiting at final acceptance, or refused there, has not ended
    name = topics.pick(layout.ledger, topic)
    if not note.strip():
        raise UsageError("abandoning a campaign needs a reason", hint="pass --note \"why\"")
    who = seams.who(layout.root, as_who)
    out = Reporter(quiet=quiet)
    with CampaignLock(layout.scratch / "locks", name, "abandon") as lock:
        from orchestrate.engine.runner import stop_leftovers
        if killed := stop_leftovers(name, lock.took_over):  # no resume comes after: none would stop them
            out.always(f"stopped {len(killed)} process(es) the dead runner (pid {lock.took_over['pid']}) left running: "
                       f"{' '.join(map(str, killed))}")
        recorder = Recorder(layout.ledger, name).pin()
        campaign = resume.rebuild(layout, recorder, from_log=False, warn=lambda m: out.always(f"warning: {m}"))
        # from the state rebuilt out of what the recorder committed: an abandon cut off before its commit is undone
        if campaign.abandoned or campaign.accepted_by:
            raise UsageError(f"campaign {name} has already ended", hint="`orchestrate clean` removes what it left")
        ctx = Context(layout=layout, campaign=campaign, recorder=recorder, executor=LocalExecutor(1), out=out)
        decided = ctx.emit("abandon", {"who": who, "note": note, "state": campaign.state, "tip": campaign.tip},
                           source_entity=f"human:{who}", source_type="human",
                           derived_from=[recorder.last_id] if recorder.last_id else [])
        ctx.emit("close", {"tip": campaign.tip, "merged": list(campaign.merged), "abandoned": True, "who": who},
                 derived_from=[decided["id"]])
        path = sketch.find(layout.ledger, name)
        if path is not None:
            sketch.set_status(path, "ABANDONED")
        recorder.commit(f"{name}: abandoned by {who} in {campaign.state}", note)
    out.always(f"campaign {name} abandoned by {who} in {campaign.state}; its branches are kept "
               f"(`orchestrate clean --topic {name}` removes its worktrees and merged node branches)")
    return 0


def refuse_resume(recorder: Recorder) -> None:
    """`resume` of an abandoned campaign: say who ended it and why, and change nothing."""
    for entry in reversed(recorder.read()):
        if entry["kind"] == "abandon":
            cx = entry["context"]
            raise Halted(f"campaign {recorder.topic} was abandoned by {cx['who']} at {entry['created_at'][:19]}: "
                         f"{cx['note']}", hint="start it again under another topic: orchestrate run --topic NEW")
