"""Commands that read a campaign's record back: `why` (provenance of a node) and `doctor` (the journal's audit).
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import _json, cli, json_option
from orchestrate.errors import ExitCode, UsageError
from orchestrate.printable import printable


@cli.command(short_help="The lineage of a node's newest merge")
@click.argument("node")
@click.option("--topic", help="Campaign topic (default: as for `status`, the one in flight or paused; "
                               "when every one has ended, the newest; several: listed).")
@json_option
def why(node: str, topic: str | None, as_json: bool) -> int:
    """Why NODE is in the campaign: the lineage of its newest merge, read from the journal.

    Prints merge -> the accept verdict at the merged head -> the gate entries that verdict cites -> the
    node's status changes, seams and decisions, with the commits each names and the recorder commit
    that holds the merge. Checks the lineage rules on the way (an accept cites a passing gate of the
    node, a merge cites an accept given at the same head, references exist, a human decision says who).

    \b
    Examples:
      orchestrate why D2
      orchestrate why D2 --topic api-v2 --json

    \b
    Exit codes:
      0  the lineage holds
      1  a lineage rule is broken (each is printed), or the journal holds a line orchestrate did
         not write (the first is named; `orchestrate doctor` lists them all)
      2  unknown campaign or node, no campaign started, or several in flight or paused and no
         --topic (listed, newest first)
    """
    import re

    from orchestrate import git
    from orchestrate.recorder import damage, provenance, topics
    from orchestrate.recorder.journal import Recorder
    from orchestrate.recorder.locate import project
    layout = project(Path.cwd())
    name = topics.pick(layout.ledger, topic, newest_ended=True)
    recorder = Recorder(layout.ledger, name)
    damage.refuse(recorder.journal, "nothing was traced")
    entries = recorder.read()
    if not entries:
        raise topics.unknown(layout.ledger, name)
    if not any(e["context"].get("node") == node for e in entries):
        raise UsageError(f"campaign {name} has no entry for node `{node}`")
    found = provenance.chain(entries, node)
    if found.merge:
        subject = f"^{re.escape(name)}: MERGE merged -> [A-Z_]+ \\({re.escape(node)}\\)$"
        found.recorder_commit = git.out(layout.ledger, "log", "-1", "--format=%H", "-E", f"--grep={subject}",
                                        "HEAD", check=False) or None
    if as_json:
        click.echo(_json().dumps(found.to_json(), indent=2))
    else:
        for line in provenance.render(found):  # a gate's items name files a worker named
            click.echo(printable(line))
    return ExitCode.FAILED if found.problems else ExitCode.OK


@cli.command(short_help="Audit a campaign's journal, branch and recorder history")
@click.option("--topic", help="Campaign topic (default: as for `status`, the one in flight or paused; "
                               "when every one has ended, the newest; several: listed).")
@json_option
def doctor(topic: str | None, as_json: bool) -> int:
    """Audit a campaign's journal, read-only: every entry has the eight provenance fields (id, seq,
    created_at, source_entity, source_type, kind, derived_from, context), seq counts up by one,
    created_at is UTC ending in Z, source_type is one of the closed set, ids are unique, and the
    lineage rules hold (an accept cites a passing gate of its node, references name earlier entries,
    a human decision says who). Each problem is printed as `journal.jsonl:LINE: ...`.

    The recorder refuses to write such an entry, so a problem means the journal was edited by hand or
    damaged. A torn last line (a crash mid-append; resume drops it) is a warning. Then campaign/<topic>
    is audited for merges orchestrate did not make (FORGED) and commits made on it directly (DIRECT),
    and the recorder's own history: an object its refs reach that is missing from its store, a ref that
    names nothing, a .ledger/.git git cannot open (`git fsck --connectivity-only` from the refs' tips:
    an old commit of the record could not be read back).

    \b
    Examples:
      orchestrate doctor
      orchestrate doctor --topic api-v2 --json

    \b
    Exit codes:
      0  the journal, the branch and the recorder's history are sound
      1  a problem was found (each is printed)
      2  unknown campaign, no campaign started, or several in flight or paused and no --topic
         (listed, newest first)
    """
    from orchestrate.recorder import doctor as audit
    from orchestrate.recorder import topics
    from orchestrate.recorder.locate import project
    layout = project(Path.cwd())
    name = topics.pick(layout.ledger, topic, newest_ended=True)
    journal = layout.ledger / "state" / name / "journal.jsonl"
    if not journal.is_file():
        raise topics.unknown(layout.ledger, name)
    report = audit.audit(journal)
    if as_json:
        click.echo(_json().dumps(report.to_json(), indent=2))
    else:
        for line in audit.render(report):
            click.echo(printable(line))
    return ExitCode.FAILED if report.problems else ExitCode.OK
