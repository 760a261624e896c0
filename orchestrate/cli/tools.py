"""Commands beside a campaign: `gate` (one gate alone), `plugins`, `demo`, `replay` and `help`.
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import _json, cli, json_option
from orchestrate.errors import ExitCode, UsageError


@cli.command(short_help="List the installed plugins")
@json_option
def plugins(as_json: bool) -> int:
    """List installed plugins (entry-point groups orchestrate.gates and orchestrate.workers) with their
    state: ok, warning (an older protocol_version, loaded), refused (a newer, missing or non-integer
    protocol_version, or a name two distributions export) or unavailable (failed to import). A plugin
    only has to load when a DAG uses it.

    \b
    Examples:
      orchestrate plugins
      orchestrate plugins --json

    \b
    Exit codes:
      0  listed (a refused or unavailable plugin is a state, not an error)
    """
    from orchestrate import plugins as found
    listed = found.discover()
    click.echo(_json().dumps(found.as_json(listed)) if as_json else found.render(listed))
    return ExitCode.OK


@cli.command(short_help="Build a demo repository and run its campaign")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--red", is_flag=True, help="Run the red demo instead: a boundary that finds an orphaned link and halts.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--quiet", "-q", is_flag=True, help="Print only results and seams.")
def demo(directory: Path | None, red: bool, jobs: int | None, quiet: bool) -> int:
    """Build a fresh demo repository in DIRECTORY (default: a new temporary folder, printed) and run
    the demo campaign there: a parallel layer, a surface widening, a serialization, a stale premise
    answered from a file, a coherent boundary, CLOSE, and the final-acceptance seam. Prints what to
    look at next. With --red, a boundary finds an orphaned link and the campaign halts; the message says
    how to repair it and resume.

    \b
    Examples:
      orchestrate demo
      orchestrate demo /tmp/demo --jobs 2
      orchestrate demo --red

    \b
    Exit codes:
      0  the demo ended as designed (for --red: it halted as designed)
      1  it did not
      2  DIRECTORY exists and is not empty
    """
    from orchestrate.replay.demo import run as run_demo
    return run_demo(directory, red=red, quiet=quiet, jobs=jobs)


@cli.command(short_help="Replay transcripts, or a recorded campaign")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--update", is_flag=True, help="Rewrite each failing transcript to the actual output.")
@click.option("--campaign", "topic", help="Replay the recorded campaign TOPIC instead of transcripts.")
@click.option("--recorder", type=click.Path(file_okay=False, path_type=Path),
              help="With --campaign: the recorder holding it (default: .ledger of this repository).")
def replay(paths: tuple[Path, ...], update: bool, topic: str | None, recorder: Path | None) -> int:
    """Replay transcripts, or a recorded campaign.

    PATHS: cram-style .t files, or folders (every *.t below them, hidden ones left out). Each runs
    with cram's semantics (prysk's where they differ): its commands in one /bin/sh, in
    $PRYSK_TEMP/<file name>, with the caller's environment and LANG, LC_ALL, LANGUAGE=C, TZ=GMT, CDPATH,
    COLUMNS=80, GREP_OPTIONS reset; TESTDIR, TESTFILE, TMPDIR set. A failing file prints a unified
    diff; a shell exiting 80, or an empty file, is skipped. The last line counts them:
    `N passed, N failed, N skipped`. --update rewrites each failing file (unless a command did not
    run) so that cram and prysk pass it: output that is not printable UTF-8 as (esc) escapes, a last
    line without a newline as (no-eol).

    --campaign TOPIC: re-drive the recorded campaign in a scratch clone, every worker replaced by its
    recorded commits (no worker runs); each gate verdict, merge and seam must come out as recorded.
    A divergence names the first fact that differs.

    \b
    Examples:
      orchestrate replay demo/TRANSCRIPT.t
      orchestrate replay tests/transcripts --update
      orchestrate replay --campaign api-v2

    \b
    Exit codes:
      0  nothing failed
      1  a transcript or the campaign diverged, or its journal holds a line orchestrate did not write
      2  a path is missing, binary or not a transcript (nothing runs then)
    """
    if topic:
        if paths:
            raise UsageError("give transcript PATHS or --campaign TOPIC, not both")
        from orchestrate.replay.campaign import replay_campaign
        return replay_campaign(Path.cwd(), topic, recorder)
    if not paths:
        raise UsageError("give a transcript PATH (or a folder of them), or --campaign TOPIC")
    from orchestrate.replay.transcript import replay as replay_transcripts
    return replay_transcripts(list(paths), update=update)


@cli.command(short_help="Run one gate by hand (orchestrate gate NAME --help)",
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
             add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def gate(args: tuple[str, ...]) -> int:
    """Run one gate: orchestrate gate NAME [ARGS]... (`orchestrate gate NAME --help` for its arguments).

    \b
    Examples:
      orchestrate gate coherence --base HEAD~1

    \b
    Exit codes:
      0  pass
      1  fail
      2  usage or environment error
      3  the gate's alternative route
    """
    from gates.registry import GATES, module
    if not args or args[0] in ("-h", "--help"):
        click.echo("Usage: orchestrate gate NAME [ARGS]...\n\n  Run one gate. Gates:")
        width = max(map(len, GATES))
        for name, (_, summary) in GATES.items():
            click.echo(f"    {name:<{width}}  {summary}")
        click.echo("\n  `orchestrate gate NAME --help` shows its arguments and exit codes.\n\n"
                   "  Examples:\n    orchestrate gate coherence --base HEAD~1\n"
                   "    git diff --name-only HEAD~1 | orchestrate gate authorize --dag .ledger/state/dag.yaml\n\n"
                   "  Exit codes:\n    0  pass\n    1  fail\n    2  usage or environment error (a gate that cannot "
                   "run never passes)\n    3  its alternative route (SERIALIZE, CONFLICT)")
        return ExitCode.OK if args else ExitCode.USAGE
    name = args[0]
    if name not in GATES:
        from orchestrate.dag.schema import did_you_mean
        raise UsageError(f"no gate named `{name}`{did_you_mean(name, GATES)}",
                         hint="`orchestrate gate --help` lists them")
    return module(name).main(list(args[1:]), prog=f"orchestrate gate {name}")


@cli.command(name="help", short_help="Show orchestrate's help, or one command's")
@click.argument("command", required=False)
@click.pass_context
def help_command(ctx: click.Context, command: str | None) -> int:
    """Show orchestrate's help, or COMMAND's: the same as `orchestrate --help` and `orchestrate COMMAND
    --help` (`orchestrate help gate` lists the gates; `orchestrate gate NAME --help` shows one).

    \b
    Examples:
      orchestrate help
      orchestrate help decide

    \b
    Exit codes:
      0  shown
      2  no such command (the commands are listed by `orchestrate help`)
    """
    top = ctx.find_root()
    if command is None:
        click.echo(top.command.get_help(top))
        return ExitCode.OK
    found = cli.get_command(top, command)
    if found is None:
        raise UsageError(f"no command `{command}`", hint="`orchestrate help` lists them")
    if found is gate:  # its help is its own (it takes no options of click's)
        return gate.callback(("--help",))
    click.echo(found.get_help(click.Context(found, info_name=command, parent=top)))
    return ExitCode.OK
