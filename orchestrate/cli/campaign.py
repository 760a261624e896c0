"""Commands on a campaign: `init`, `run`, `resume`, `status`, the answers a person gives (`decide`,
`approve`, `skip`, `realign`), and ending one (`abandon`, `clean`).
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import answers_option, cli, dag_option, edge_answer_options, executor_options, json_option
from orchestrate.errors import ExitCode


@cli.command()
def init() -> int:
    """Create the recorder .ledger/ (a nested git repository) in the current repository.

    Copies the template (log/, state/, a commented config.yaml, gates/README.md), makes the first
    recorder commit, and adds .ledger/ and .scratch/ to .git/info/exclude. Safe to run again; never
    changes a tracked file. Exit 2 outside a git repository.
    """
    from orchestrate.recorder.init import init_project
    layout, done = init_project(Path.cwd())
    for line in done:
        click.echo(line)
    if not done:
        click.echo(f"already initialised: {layout.ledger}")
    return ExitCode.OK


@cli.command()
@dag_option
@click.option("--topic", help="Campaign topic (default: the DAG's `topic:`, else the file's stem).")
@click.option("--mode", type=click.Choice(["interactive", "autonomous"]), help="Override the DAG's mode.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--quiet", "-q", is_flag=True, help="Print only results, seams and errors.")
@answers_option
@click.option("--interactive/--no-interactive", default=None,
              help="Ask at seams or never ask (default: ask when stdin is a terminal and CI is unset).")
@executor_options
def run(dag_path: Path | None, topic: str | None, mode: str | None, jobs: int | None, quiet: bool,
        answers: Path | None, interactive: bool | None, executor) -> int:
    """Run a campaign to its end or to a human seam.

    Validates the DAG (an invalid one exits 1 before anything is written), creates campaign/<topic>
    at the baseline, then for each layer runs every node's worker in its own worktree and branch,
    judges each result with the gates, and merges what passes with --no-ff. Every transition is a
    commit in .ledger/. Exits 0 done, 1 halted (the message says what to fix), 75 paused at a seam,
    130 interrupted (`orchestrate resume` continues).

    With --executor dask, each worker runs on a Dask cluster: the node branch is pushed to --remote at
    its base, a Dask worker fetches it, runs the worker, pushes the branch back, and the engine fetches
    and judges it as usual. Only node branches are ever pushed, and only to --remote.
    """
    from orchestrate.engine.runner import run_campaign
    return run_campaign(Path.cwd(), dag_path, topic=topic, mode=mode, jobs=jobs, quiet=quiet, answers=answers,
                        executor=executor, interactive=interactive)


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight; several in flight: required).")
@click.option("--from-log", is_flag=True, help="Ignore checkpoints and rebuild the state from the journal alone.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--quiet", "-q", is_flag=True, help="Print only results, seams, repairs and errors.")
@answers_option
@click.option("--interactive/--no-interactive", default=None,
              help="Ask at seams or never ask (default: ask when stdin is a terminal and CI is unset).")
@executor_options
def resume(topic: str | None, from_log: bool, jobs: int | None, quiet: bool, answers: Path | None,
           interactive: bool | None, executor) -> int:
    """Continue the in-flight campaign after a crash, a Ctrl-C, a halt or a pause.

    Rebuilds the state from the newest valid checkpoint plus the journal after it, reconciles it with
    git (worktrees, branches, merges, workers the dead runner left, stale lock files), prints each
    repair, and continues. Exit codes as for `run`; 4 when another runner holds the campaign.
    """
    from orchestrate.engine.runner import resume_campaign
    return resume_campaign(Path.cwd(), topic=topic, from_log=from_log, jobs=jobs, quiet=quiet, answers=answers,
                           executor=executor, interactive=interactive)


@cli.command()
@click.argument("seam")
@click.argument("choice")
@click.option("--topic", help="Campaign topic (default: the one waiting at a seam).")
@click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")
@click.option("--note", default="", help="Why; a rework note goes into the node's next brief.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def decide(seam: str, choice: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Answer an open human seam: SEAM is final-acceptance, reserved-halt, realignment,
    review-divergence, dag-amendment, guardrail or handwork; CHOICE is one the seam offers
    (`orchestrate status` lists them).

    Records who (git config user.email, or --as), when, the choice, the note and the commit the gates
    judged. `orchestrate resume` applies it; `decide final-acceptance accept` completes the campaign
    itself (merging campaign/<topic> and pushing stay yours). A seam that is not open is refused with
    exit 2 and nothing is written.
    """
    from orchestrate.engine.runner import decide as decide_seam
    return decide_seam(Path.cwd(), seam, choice, topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command()
@edge_answer_options
def approve(edge: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Cross EDGE, which a `block` guardrail stopped: its target is dispatched on `orchestrate resume`.

    Records a human decision (who: git config user.email, or --as; when; the note) citing the
    guardrail's recorded result, so `orchestrate why` shows who let the change through. The same as
    `orchestrate decide guardrail approve`. Refused with exit 2, nothing written, when EDGE is not the
    edge waiting at the guardrail seam or nobody can be named as the approver.
    """
    from orchestrate.engine.runner import decide as decide_seam
    return decide_seam(Path.cwd(), "guardrail", "approve", topic=topic, as_who=as_who, note=note, quiet=quiet,
                       edge=edge)


@cli.command()
@edge_answer_options
def skip(edge: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Leave EDGE, which a `block` guardrail stopped, untaken: on `orchestrate resume` its target's
    join decides (with `join: all` the target, and what waits for it, is SKIPPED).

    Recorded like `approve`; the same as `orchestrate decide guardrail skip`. Refused with exit 2,
    nothing written, when EDGE is not the edge waiting at the guardrail seam.
    """
    from orchestrate.engine.runner import decide as decide_seam
    return decide_seam(Path.cwd(), "guardrail", "skip", topic=topic, as_who=as_who, note=note, quiet=quiet,
                       edge=edge)


@cli.command()
@click.option("--rediscover", "node", required=True, metavar="NODE",
              help="Set aside NODE's recorded worker resolution, so it is made again.")
@click.option("--topic", help="Campaign topic (default: the one in flight).")
@click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")
@click.option("--note", default="", help="Why.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def realign(node: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Change a decision the campaign recorded, by a person's word. Today one: `--rediscover NODE`.

    A worker chosen by capability is recorded once and never chosen again, also on resume; when that
    plugin is gone for good, `--rediscover` records (as a human decision citing the old resolution) that
    it no longer stands, and `orchestrate resume` chooses again among what is installed now. Only for
    a node not yet dispatched. Exit 0, 2 (nothing written) for a node without a recorded resolution,
    one already dispatched, or no identity to record.
    """
    from orchestrate.engine.runner import rediscover
    return rediscover(Path.cwd(), node, topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight).")
@json_option
def status(topic: str | None, as_json: bool) -> int:
    """Show the campaign's layer, every node's status and attempt, open seams, and why each waiting
    node waits."""
    from orchestrate.report.status import show
    print(show(Path.cwd(), topic, as_json))
    return ExitCode.OK


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight).")
@click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")
@click.option("--note", required=True, help="Why the campaign ends here (recorded).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def abandon(topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """End a campaign for good, as a recorded human decision: who (git config user.email, or --as),
    when, and --note. Its branches and worktrees stay; `resume` no longer picks it, and
    `orchestrate clean` may then remove what it left. Exit 0; 2 (nothing written) for a campaign that
    has already ended or without --note; 4 while a runner holds it.
    """
    from orchestrate.engine.abandon import abandon as end
    return end(Path.cwd(), topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command()
@click.option("--topic", help="One ended campaign (default: every ended campaign).")
@click.option("--dry-run", is_flag=True, help="List what would be removed, remove nothing.")
@json_option
def clean(topic: str | None, dry_run: bool, as_json: bool) -> int:
    """Remove the worktrees and the merged node branches of ended (closed or abandoned) campaigns.

    A node branch whose head is not merged into campaign/<topic> is kept and listed, and so is a
    worktree with uncommitted changes. campaign/<topic> itself is never touched. Exit 0; 2 when
    --topic names a campaign still in flight.
    """
    import json

    from orchestrate.recorder import clean as cleaning
    from orchestrate.recorder.locate import project
    layout = project(Path.cwd())
    names = cleaning.ended(layout, topic)
    todo = cleaning.plan(layout, names)
    done = [] if dry_run else cleaning.apply(layout, todo)
    if as_json:
        click.echo(json.dumps({"topics": names, "dry_run": dry_run, **todo.to_json(), "done": done}, indent=2))
        return ExitCode.OK
    verb = "would remove" if dry_run else "removed"
    for line in ([f"{verb} worktree {w}" for w in todo.worktrees] + [f"{verb} branch {b}" for b in todo.branches]
                 if dry_run else done):
        click.echo(line)
    for what, why in todo.kept.items():
        click.echo(f"kept {what}: {why}")
    if not (todo.worktrees or todo.branches or todo.kept):
        click.echo("nothing to clean" + (f" for {', '.join(names)}" if names else ": no campaign has ended"))
    return ExitCode.OK
