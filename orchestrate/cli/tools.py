"""Commands beside a campaign: `gate` (one gate alone), `plugins`, `demo` and `replay`.
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import _json, cli, json_option
from orchestrate.errors import ExitCode, UsageError


@cli.command()
@json_option
def plugins(as_json: bool) -> int:
    """List installed plugins (entry-point groups orchestrate.gates and orchestrate.workers) with their
    state: ok, warning (an older protocol_version, loaded), refused (a newer, missing or non-integer
    protocol_version, or a name two distributions export) or unavailable (failed to import). A plugin
    only has to load when a DAG uses it. Exit 0.
    """
    from orchestrate import plugins as found
    listed = found.discover()
    click.echo(_json().dumps(found.as_json(listed)) if as_json else found.render(listed))
    return ExitCode.OK


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--red", is_flag=True, help="Run the red demo instead: a boundary that finds an orphaned link and halts.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--quiet", "-q", is_flag=True, help="Print only results and seams.")
def demo(directory: Path | None, red: bool, jobs: int | None, quiet: bool) -> int:
    """Build a fresh demo repository in DIRECTORY (default: a new temporary folder, printed) and run
    the demo campaign there: a parallel layer, a surface widening, a serialization, a stale premise
    answered from a file, a coherent boundary, CLOSE, and the final-acceptance seam. Exits 0 when the
    demo ends as designed, and prints what to look at next.
    """
    from orchestrate.replay.demo import run as run_demo
    return run_demo(directory, red=red, quiet=quiet, jobs=jobs)


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--update", is_flag=True, help="Rewrite the transcript's expectations with the actual output.")
@click.option("--campaign", "topic", help="Replay the recorded campaign TOPIC instead of a transcript.")
@click.option("--recorder", type=click.Path(file_okay=False, path_type=Path),
              help="With --campaign: the recorder holding it (default: .ledger of this repository).")
def replay(path: Path | None, update: bool, topic: str | None, recorder: Path | None) -> int:
    """Replay a transcript, or a recorded campaign.

    PATH: a cram-style .t file. Its commands run in one shell in a scratch directory with a normalised
    environment (NO_COLOR, TZ=UTC, LC_ALL=C, a fixed git identity and commit dates, CI=true); each
    command's output and exit code must match. A mismatch prints a unified diff.

    --campaign TOPIC: re-drive the recorded campaign in a scratch clone, every worker replaced by its
    recorded commits (no worker runs); each gate verdict, merge and seam must come out as recorded.
    A divergence names the first fact that differs. Exit 0 when everything matches, 1 otherwise.
    """
    if topic:
        from orchestrate.replay.campaign import replay_campaign
        return replay_campaign(Path.cwd(), topic, recorder)
    if path is None:
        raise UsageError("give a transcript PATH, or --campaign TOPIC")
    from orchestrate.replay.transcript import replay as replay_transcript
    return replay_transcript(path, update=update)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
             add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def gate(args: tuple[str, ...]) -> int:
    """Run one gate: orchestrate gate NAME [ARGS]... (`orchestrate gate NAME --help` for its arguments).

    Gates exit 0 pass, 1 fail, 2 usage or environment error, 3 their alternative route.
    """
    from gates.registry import GATES, module
    if not args or args[0] in ("-h", "--help"):
        click.echo("Usage: orchestrate gate NAME [ARGS]...\n\nRun one gate. Gates:")
        width = max(map(len, GATES))
        for name, (_, summary) in GATES.items():
            click.echo(f"  {name:<{width}}  {summary}")
        click.echo("\nEach exits 0 pass, 1 fail, 2 usage or environment error, 3 its alternative route;"
                   "\n`orchestrate gate NAME --help` shows its arguments and exit codes.")
        return ExitCode.OK if args else ExitCode.USAGE
    name = args[0]
    if name not in GATES:
        from orchestrate.dag.schema import did_you_mean
        raise UsageError(f"no gate named `{name}`{did_you_mean(name, GATES)}",
                         hint="`orchestrate gate --help` lists them")
    return module(name).main(list(args[1:]), prog=f"orchestrate gate {name}")
