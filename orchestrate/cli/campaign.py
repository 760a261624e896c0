"""Commands on a campaign: `init`, `run`, `resume`, `status`, the answers a person gives (`decide`,
`approve`, `skip`, `realign`), and ending one (`abandon`, `clean`).
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import (
    answers_option,
    cli,
    dag_option,
    edge_answer_options,
    executor_options,
    json_option,
    new_topic_option,
    not_empty,
    seams_help,
)
from orchestrate.errors import ExitCode


@cli.command(short_help="Create the recorder .ledger/ in this repository")
def init() -> int:
    """Create the recorder .ledger/ (a nested git repository) in the current repository, and a
    starter plan .ledger/state/dag.yaml unless one exists.

    Copies the template (log/, state/, a commented config.yaml, gates/README.md), makes the first
    recorder commit, writes the commented starter plan (two nodes, an evaluator, a campaign check; it
    validates and runs as it is), and adds .ledger/ and .scratch/ to .git/info/exclude. Safe to run
    again; never changes a tracked file.

    \b
    Examples:
      orchestrate init
      orchestrate init && orchestrate validate && orchestrate run

    \b
    Exit codes:
      0  created, or already there
      2  not in a git repository, a bare repository, or .ledger/ exists and is not a recorder
    """
    from orchestrate.recorder.init import init_project
    layout, done = init_project(Path.cwd())
    for line in done:
        click.echo(line)
    if not done:
        click.echo(f"already initialised: {layout.ledger}")
    return ExitCode.OK


@cli.command(short_help="Run a campaign to its end or to a human seam")
@dag_option
@new_topic_option
@click.option("--mode", type=click.Choice(["interactive", "autonomous"]), help="Override the DAG's mode.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--schedule", type=click.Choice(["eager", "layered"]),
              help="Override the DAG's `schedule:` (default eager). Fixed for the campaign once it opens.")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only seams, halts, warnings, the final line and a progress line every 30 s (no live view).")
@answers_option
@click.option("--interactive/--no-interactive", default=None,
              help="Ask at seams or never ask (default: ask when stdin is a terminal and CI is not true).")
@executor_options
def run(dag_path: Path | None, topic: str | None, mode: str | None, jobs: int | None, schedule: str | None,
        quiet: bool, answers: Path | None, interactive: bool | None, executor) -> int:
    """Run a campaign to its end or to a human seam.

    Validates the DAG and .ledger/config.yaml (invalid: exit 1 before anything is written), creates
    campaign/<topic> at the baseline, then runs every node's worker in its own worktree and branch,
    judges each result with the gates, and merges what passes with --no-ff. Every transition is a
    commit in .ledger/.

    Under the eager schedule (the default) a node starts as soon as every node it depends on has
    settled and a --jobs slot is free; landed nodes are judged while others run, their evaluators up to
    --jobs at once; merges go one at a time. Layers are still where coherence is checked. `--schedule
    layered` (or `schedule: layered` in the DAG) starts a layer only when the previous one has merged.
    A seam about one node (realignment, review-divergence, reserved-halt) does not stop an eager run:
    the person is told at once, `orchestrate decide` answers while the run goes on, and the run asks
    (or pauses, exit 75) only once nothing else can progress.

    With --executor dask, each worker runs on a Dask cluster: the node branch is pushed to --remote at
    its base, a Dask worker fetches it, runs the worker, pushes the branch back, and the engine fetches
    and judges it as usual. Only node branches are ever pushed, and only to --remote.

    \b
    Examples:
      orchestrate run
      orchestrate run --dag plans/api.yaml --topic api-v2 --jobs 4
      orchestrate run --no-interactive --answers answers.yaml

    \b
    Exit codes:
      0    done (accepted at final acceptance)
      1    halted, or the DAG is invalid (the message says what to fix)
      2    usage error or unusable input (no DAG file, an unresolvable base); nothing was written
      4    another runner holds the campaign
      75   paused at a human seam (`orchestrate decide` answers it)
      130  interrupted by Ctrl-C or SIGTERM: workers stopped, state saved (`orchestrate resume`
           continues)
    """
    from orchestrate.engine.runner import run_campaign
    return run_campaign(Path.cwd(), dag_path, topic=topic, mode=mode, jobs=jobs, quiet=quiet, answers=answers,
                        executor=executor, interactive=interactive, schedule=schedule)


@cli.command(short_help="Continue a campaign from where it stopped")
@click.option("--topic", help="Campaign topic (default: the one in flight or paused; several: listed).")
@click.option("--from-log", is_flag=True, help="Ignore checkpoints and rebuild the state from the journal alone.")
@click.option("--jobs", "-j", type=click.IntRange(min=1),
              help="Workers at once (default: the --jobs the campaign was run with, if one was given; else one per CPU).")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only seams, halts, repairs, warnings, the final line and a progress line every 30 s.")
@answers_option
@click.option("--interactive/--no-interactive", default=None,
              help="Ask at seams or never ask (default: ask when stdin is a terminal and CI is not true).")
@executor_options
def resume(topic: str | None, from_log: bool, jobs: int | None, quiet: bool, answers: Path | None,
           interactive: bool | None, executor) -> int:
    """Continue a campaign after a crash, a Ctrl-C or SIGTERM, a halt or a pause.

    Without --topic: the single campaign that is in flight or paused (at any seam, final acceptance
    included); with several, they are listed newest first with their states (exit 2). Rebuilds the state
    from the newest valid checkpoint plus the journal after it, reconciles it with git (worktrees,
    branches, merges, workers the dead runner left, stale lock files), prints each repair, and continues.

    \b
    Examples:
      orchestrate resume
      orchestrate resume --topic api-v2 --from-log

    \b
    Exit codes:
      0    done
      1    halted (the message says why and how to go on or abandon it), or the journal holds a
           line orchestrate did not write (the first is named)
      2    no campaign to resume, several to choose from, or an unknown topic
      4    another runner holds the campaign
      75   paused at a human seam
      130  interrupted by Ctrl-C or SIGTERM
    """
    from orchestrate.engine.runner import resume_campaign
    topic = _picked(topic)
    return resume_campaign(Path.cwd(), topic=topic, from_log=from_log, jobs=jobs, quiet=quiet, answers=answers,
                           executor=executor, interactive=interactive)


@cli.command(short_help="Answer an open human seam",
             epilog=seams_help)
@click.argument("seam")
@click.argument("choice")
@click.option("--topic", help="Campaign topic (default: the one in flight or paused; several: listed).")
@click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")
@click.option("--note", default="", help="Why; a rework note goes into the node's next brief.")
@click.option("--node", metavar="NODE", help="Answer only if the open seam asks about NODE (else exit 2).")
# a plain float: the range is checked in decide, so -1 and 0 get the one-line error nan and inf get, not
# click's usage block
@click.option("--limit-usd", type=float, metavar="X",
              help="budget raise: the campaign's new cost limit in US dollars.")
@click.option("--limit-tokens", type=click.IntRange(min=1), metavar="N",
              help="budget raise: the campaign's new limit in tokens (input plus output).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def decide(seam: str, choice: str, topic: str | None, as_who: str | None, note: str, node: str | None,
           limit_usd: float | None, limit_tokens: int | None, quiet: bool) -> int:
    """Answer an open human seam: SEAM is one of the seams listed below, CHOICE one its line offers
    (`orchestrate status` shows the open seam and its choices).

    Without --topic: the single campaign that is in flight or paused, as for `resume`. Records who (git
    config user.email, or --as), when, the choice, the note and the commit the gates judged.
    `orchestrate resume` applies it; `decide final-acceptance accept` completes the campaign itself
    (merging campaign/<topic> and pushing stay yours). `decide budget raise` needs the new limit:
    --limit-usd X, --limit-tokens N, or both.

    While a runner holds the campaign (the eager schedule goes on past a seam about one node:
    realignment, review-divergence, reserved-halt), the answer is left for that runner, which records
    and applies it at its next step; a campaign whose workers run without the sandbox takes answers only
    once it pauses.

    \b
    Examples:
      orchestrate decide final-acceptance accept --note "read the diff"
      orchestrate decide realignment rework --note "use the v2 client" --topic api-v2

    \b
    Exit codes:
      0  recorded (for final acceptance: the campaign is complete), or left for the running campaign
      1  the journal holds a line orchestrate did not write (the first is named); nothing is written
      2  the seam is not open (for --node NODE: not about that node; or an answer is already
         recorded, waiting for `orchestrate resume` to apply it), the choice is not one it offers,
         the campaign was abandoned, several campaigns to choose from, or no identity to record;
         nothing is written
      4  a runner holds the campaign and takes no answer now (or one already waits for it)
    """
    from orchestrate.errors import UsageError
    from orchestrate.seams.choices import limit_note
    raising = (seam, choice) == ("budget", "raise")
    if limit_usd is not None and not 0 < limit_usd < float("inf"):  # false for nan too
        raise UsageError(f"--limit-usd must be a finite number above 0, got {limit_usd:g}",
                         hint="give the new limit in US dollars, as in --limit-usd 5")
    if raising and limit_usd is None and limit_tokens is None:
        raise UsageError("budget raise needs the new limit", hint="add --limit-usd X and/or --limit-tokens N")
    if not raising and (limit_usd is not None or limit_tokens is not None):
        raise UsageError("--limit-usd and --limit-tokens answer `budget raise` only")
    if raising:
        note = limit_note(limit_usd, limit_tokens, note)
    from orchestrate.engine.runner import decide as decide_seam
    topic = _picked(topic)
    return decide_seam(Path.cwd(), seam, choice, topic=topic, as_who=as_who, note=note, quiet=quiet, node=node)


@cli.command(short_help="Let an edge a guardrail blocked through")
@edge_answer_options
def approve(edge: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Cross EDGE, which a `block` guardrail stopped: its target is dispatched on `orchestrate resume`.

    Records a human decision (who: git config user.email, or --as; when; the note) citing the
    guardrail's recorded result, so `orchestrate why` shows who let the change through. The same as
    `orchestrate decide guardrail approve`.

    \b
    Examples:
      orchestrate approve --edge e6 --note "the secret is a test fixture"

    \b
    Exit codes:
      0  recorded
      1  the journal holds a line orchestrate did not write (the first is named); nothing is written
      2  EDGE is not the edge waiting at the guardrail seam, or nobody can be named as the approver;
         nothing is written
      4  a runner holds the campaign and takes no answer now (or one already waits for it)
    """
    from orchestrate.engine.runner import decide as decide_seam
    topic = _picked(topic)
    return decide_seam(Path.cwd(), "guardrail", "approve", topic=topic, as_who=as_who, note=note, quiet=quiet,
                       edge=edge)


@cli.command(short_help="Leave an edge a guardrail blocked untaken")
@edge_answer_options
def skip(edge: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Leave EDGE, which a `block` guardrail stopped, untaken: on `orchestrate resume` its target's
    join decides (with `join: all` the target, and what waits for it, is SKIPPED).

    Recorded like `approve`; the same as `orchestrate decide guardrail skip`.

    \b
    Examples:
      orchestrate skip --edge e6 --note "not this campaign"

    \b
    Exit codes:
      0  recorded
      1  the journal holds a line orchestrate did not write (the first is named); nothing is written
      2  EDGE is not the edge waiting at the guardrail seam; nothing is written
      4  a runner holds the campaign and takes no answer now (or one already waits for it)
    """
    from orchestrate.engine.runner import decide as decide_seam
    topic = _picked(topic)
    return decide_seam(Path.cwd(), "guardrail", "skip", topic=topic, as_who=as_who, note=note, quiet=quiet,
                       edge=edge)


@cli.command(short_help="Change a recorded decision (--rediscover NODE)")
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
    a node not yet dispatched.

    \b
    Examples:
      orchestrate realign --rediscover N4 --note "the alembic plugin was retired"

    \b
    Exit codes:
      0  recorded
      1  the journal holds a line orchestrate did not write (the first is named); nothing is written
      2  the node has no recorded resolution or was already dispatched, or no identity to record;
         nothing is written
      4  a runner holds the campaign: realign once it has paused (exit 75) or ended
    """
    from orchestrate.engine.runner import rediscover
    return rediscover(Path.cwd(), node, topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command(short_help="Where a campaign is, and why each node waits")
@click.option("--topic", help="Campaign topic (default: the one in flight or paused; several: listed).")
@json_option
def status(topic: str | None, as_json: bool) -> int:
    """Show the campaign's layer, every node's status and attempt, open seams with their full reason,
    why each waiting node waits, whether a runner is alive, and the workers' reported usage.

    Without --topic: the single campaign that is in flight or paused (as for `resume`); when every one
    has ended, the newest. Read-only.

    \b
    Examples:
      orchestrate status
      orchestrate status --topic api-v2 --json

    \b
    Exit codes:
      0  shown
      2  no campaign has been started here (the message says how to start one), several are in
         flight or paused (listed, newest first), or an unknown topic
    """
    from orchestrate.report.status import show
    print(show(Path.cwd(), topic, as_json))
    return ExitCode.OK


@cli.command(short_help="End a campaign for good, as a recorded human decision")
@click.option("--topic", help="Campaign topic (default: the one in flight, paused or halted; several: listed).")
@click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")
@click.option("--note", required=True, help="Why the campaign ends here (recorded).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def abandon(topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """End a campaign for good, as a recorded human decision: who (git config user.email, or --as),
    when, and --note. Its branches and worktrees stay; `resume` no longer picks it, and
    `orchestrate clean` may then remove what it left.

    \b
    Examples:
      orchestrate abandon --topic api-v2 --note "superseded by api-v3"

    \b
    Exit codes:
      0  abandoned
      1  the journal holds a line orchestrate did not write (the first is named), or lines of a
         halted runner's that it did not commit; nothing is written
      2  the campaign has already ended, several to choose from, no --note, or no identity to
         record; nothing is written
      4  a runner holds it
    """
    from orchestrate.engine.abandon import abandon as end
    return end(Path.cwd(), topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command(short_help="Remove the worktrees and merged branches of ended campaigns")
@click.option("--topic", callback=not_empty, help="One ended campaign (default: every ended campaign).")
@click.option("--dry-run", is_flag=True, help="List what would be removed, remove nothing.")
@json_option
def clean(topic: str | None, dry_run: bool, as_json: bool) -> int:
    """Remove the worktrees and the merged node branches of ended campaigns: accepted at final
    acceptance, or abandoned (one waiting at final acceptance, or refused there, has not ended).

    A node branch whose head is not merged into campaign/<topic> is kept and listed, and so is a
    worktree with uncommitted changes. campaign/<topic> itself is never touched.

    \b
    Examples:
      orchestrate clean --dry-run
      orchestrate clean --topic api-v2

    \b
    Exit codes:
      0  cleaned (or nothing to clean)
      2  --topic names no campaign, or one that has not ended (in flight, paused, or at final
         acceptance)
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


def _picked(topic: str | None) -> str:
    """The one rule `resume`, `status` and `decide` share (recorder/topics.py `pick`)."""
    from orchestrate.recorder import topics
    from orchestrate.recorder.locate import project
    return topics.pick(project(Path.cwd()).ledger, topic)
