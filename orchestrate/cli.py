"""The command line: thin click commands, one error boundary, the exit codes of DESIGN §10.

Commands parse their options, call one function, print, and return an ExitCode. Heavy modules are
imported inside the commands that need them so `orchestrate --version` starts fast.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from gates.core.errors import ExitCode, OrchestrateError, UsageError
from orchestrate import __version__

EXIT_CODES_HELP = """\b
Exit codes:
  0    done
  1    a check failed, the DAG is invalid, or the campaign halted (the message says what to fix)
  2    usage error or unusable input (missing file, not a git repository); nothing was changed
  3    SERIALIZE (collision-check) or CONFLICT (trial-merge)
  4    another runner holds the campaign, or the recorder moved under this one
  70   internal error (a bug: please report it with the traceback)
  75   paused at a human seam (`orchestrate decide` answers it)
  130  interrupted (state is saved; `orchestrate resume` continues)"""


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_CODES_HELP)
@click.version_option(__version__, "-V", "--version", prog_name="orchestrate")
def cli() -> None:
    """Run a campaign: a DAG of workers, each in its own git worktree, judged by gates and merged
    into campaign/<topic> with --no-ff. Every transition is recorded in .ledger/ so a crashed or
    paused campaign resumes exactly where it stopped. Never pushes; never touches your checkout."""


def _json():
    import json  # only the commands that print JSON pay for it
    return json


def dag_option(f):
    return click.option("--dag", "dag_path", type=click.Path(dir_okay=True, path_type=Path),
                        help="DAG file (default: .ledger/state/dag.yaml of the current repository).")(f)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(f)


def answers_option(f):
    return click.option("--answers", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="YAML answers for seams in scripted runs: SEAM: CHOICE, or SEAM: {choice: C, note: N}, "
                             "or a list of those, used in order.")(f)


def executor_options(f):
    """--executor/--scheduler/--remote, gathered into one `executor` argument (None: use config.yaml)."""
    @functools.wraps(f)
    def wrapper(*args, executor_kind, scheduler, remote, **kw):
        choice = None
        if executor_kind or scheduler or remote:
            from orchestrate.executors import choose
            from orchestrate.project import project
            choice = choose(project(Path.cwd()), kind=executor_kind, scheduler=scheduler, remote=remote)
        return f(*args, executor=choice, **kw)
    for opt in reversed((
            click.option("--executor", "executor_kind", type=click.Choice(["local", "dask"]),
                         help="Where workers run: local processes (default) or a Dask cluster "
                              "(needs the `distributed` extra). Default: executor.kind of .ledger/config.yaml."),
            click.option("--scheduler", metavar="ADDRESS",
                         help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (with --executor dask)."),
            click.option("--remote", metavar="URL",
                         help="Repository the engine and every Dask worker can fetch from and push node "
                              "branches to (with --executor dask)."))):
        wrapper = opt(wrapper)
    return wrapper


def resolve_dag_path(dag_path: Path | None) -> Path:
    if dag_path is not None:
        return dag_path
    from gates.core import git
    from orchestrate.layout import Layout
    return Layout(git.main_worktree(Path.cwd())).default_dag


@cli.command()
@dag_option
@json_option
@click.option("--topic", help="Campaign topic (default: the DAG's `topic:`, else the file's stem).")
def validate(dag_path: Path | None, as_json: bool, topic: str | None) -> int:
    """Check the DAG against every rule of its contract and list all problems at once.

    Each problem is one line `file:line: field: message` with what to change. With --json, prints a
    list of {file, line, field, code, message} (empty when valid). Every plugin the DAG names must be
    installed and protocol-compatible (`orchestrate plugins` lists them). Exit 0 valid, 1 invalid or a
    named plugin unusable, 2 unreadable file.
    """
    from gates.core.dagfile import check_dag
    path = resolve_dag_path(dag_path)
    dag, problems = check_dag(path, topic=topic)
    if dag is not None:
        from orchestrate import plugingates
        plugingates.load(dag, lambda m: click.echo(f"warning: {m}", err=True))  # a named plugin must load
    if as_json:
        click.echo(_json().dumps([p.as_dict() for p in problems], indent=2))
    elif dag is None:
        for p in problems:
            click.echo(str(p))
        click.echo(f"invalid: {len(problems)} problem(s) in {path}", err=True)
    if dag is not None and not as_json:
        layers = dag.layers()
        click.echo(f"valid: {path} ({len(dag.nodes)} nodes, {len(layers)} layers, topic {dag.topic})")
    return ExitCode.OK if dag is not None else ExitCode.FAILED


@cli.command()
@dag_option
@json_option
def layers(dag_path: Path | None, as_json: bool) -> int:
    """Print the schedule: Kahn layers in natural id order, each split into its parallel set and its
    serial rest. Nodes with `complete: true` are settled and never appear. The DAG must be valid.

    With --json, prints exactly {"layer_count": N, "layers": [[...], ...]}.
    """
    from gates.core.dagfile import load_dag
    dag = load_dag(resolve_dag_path(dag_path))
    schedule = dag.layers()
    if as_json:
        click.echo(_json().dumps({"layer_count": len(schedule), "layers": schedule}))
        return ExitCode.OK
    for k, layer in enumerate(schedule):
        parallel, serial = dag.partition(layer)
        line = f"layer {k}: {' '.join(parallel) or '-'}"
        click.echo(line + (f"  | serial: {' '.join(serial)}" if serial else ""))
    click.echo(f"{len(schedule)} layer(s), {sum(map(len, schedule))} node(s) to run")
    return ExitCode.OK


@cli.command()
@click.argument("node")
@dag_option
@click.option("--gates", "only_gates", is_flag=True, help="Print only the gates, one per line.")
@click.option("--group", "only_group", is_flag=True, help="Print only the LOOPS_WITH group, one id per line.")
@json_option
def show(node: str, dag_path: Path | None, only_gates: bool, only_group: bool, as_json: bool) -> int:
    """What the DAG derives for NODE: its layer, ordering predecessors, LOOPS_WITH group and the gates
    that judge it (its own, its COMPOSES spokes' transitively, its EXTENDS actions and its group peers',
    each once, plus the implicit outputs-present and payload-present(<edge>) contracts).

    Exit 1 for an invalid DAG, 2 for a node the DAG does not declare.
    """
    from gates.core.dagfile import did_you_mean, load_dag
    dag = load_dag(resolve_dag_path(dag_path))
    if node not in dag.by_id:
        raise UsageError(f"no node `{node}` in {dag.path}{did_you_mean(node, dag.by_id)}")
    layer = next((k for k, ids in enumerate(dag.layers()) if node in ids), None)
    info = {"id": node, "layer": layer, "depends_on": list(dag.deps()[node]), "group": list(dag.group_of(node)),
            "gates": dag.effective_gates(node),
            "incoming": [{"id": e.id, "from": e.src, "predicate": e.predicate, "type": e.type}
                         for e in dag.incoming(node)]}
    if as_json:
        click.echo(_json().dumps(info))
        return ExitCode.OK
    if only_gates or only_group:
        for value in (info["gates"] if only_gates else []) + (info["group"] if only_group else []):
            click.echo(value)
        return ExitCode.OK
    click.echo(f"{node}: layer {'-' if layer is None else layer}"
               f"{'  (complete)' if dag.by_id[node].complete else ''}")
    click.echo(f"  after: {', '.join(info['depends_on']) or '-'}")
    click.echo(f"  group: {', '.join(info['group'])}")
    click.echo(f"  gates: {', '.join(info['gates']) or '-'}")
    for e in info["incoming"]:
        click.echo(f"  edge {e['id']}: {e['from']} {e['predicate']} ({e['type']})")
    return ExitCode.OK


@cli.command()
@click.argument("node")
@click.option("--topic", help="Campaign topic (default: the one in flight, else the only one).")
@json_option
def why(node: str, topic: str | None, as_json: bool) -> int:
    """Why NODE is in the campaign: the lineage of its newest merge, read from the journal.

    Prints merge -> the accept verdict at the merged head -> the gate entries that verdict cites -> the
    node's status changes, seams and decisions, with the commits each names and the recorder commit
    that holds the merge. Checks the lineage rules on the way (an accept cites a passing gate of the
    node, a merge cites an accept given at the same head, references exist, a human decision says who).
    Exit 0, 1 when a lineage rule is broken, 2 for an unknown campaign or node.
    """
    import re

    from gates.core import git
    from orchestrate import provenance
    from orchestrate.project import pick_topic, project
    from orchestrate.recorder import Recorder
    layout = project(Path.cwd())
    name = pick_topic(layout, topic, any_state=True)
    entries = Recorder(layout.ledger, name).read()
    if not entries:
        raise UsageError(f"no campaign `{name}` in {layout.ledger}", hint="`orchestrate status` lists the known topics")
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
        for line in provenance.render(found):
            click.echo(line)
    return ExitCode.FAILED if found.problems else ExitCode.OK


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight, else the only one).")
@json_option
def doctor(topic: str | None, as_json: bool) -> int:
    """Audit a campaign's journal, read-only: every entry has the eight provenance fields (id, seq,
    created_at, source_entity, source_type, kind, derived_from, context), seq counts up by one,
    created_at is UTC ending in Z, source_type is one of the closed set, ids are unique, and the
    lineage rules hold (an accept cites a passing gate of its node, references name earlier entries,
    a human decision says who). Each problem is printed as `journal.jsonl:LINE: ...`.

    The recorder refuses to write such an entry, so a problem means the journal was edited by hand or
    damaged. A torn last line (a crash mid-append; resume drops it) is a warning. Exit 0 when clean,
    1 when a problem is found, 2 for an unknown campaign.
    """
    from orchestrate import doctor as audit
    from orchestrate.project import pick_topic, project
    layout = project(Path.cwd())
    name = pick_topic(layout, topic, any_state=True)
    journal = layout.ledger / "state" / name / "journal.jsonl"
    if not journal.is_file():
        raise UsageError(f"no campaign `{name}` in {layout.ledger}", hint="`orchestrate status` lists the known topics")
    report = audit.audit(journal)
    if as_json:
        click.echo(_json().dumps(report.to_json(), indent=2))
    else:
        for line in audit.render(report):
            click.echo(line)
    return ExitCode.FAILED if report.problems else ExitCode.OK


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
def init() -> int:
    """Create the recorder .ledger/ (a nested git repository) in the current repository.

    Copies the template (log/, state/, a commented config.yaml, gates/README.md), makes the first
    recorder commit, and adds .ledger/ and .scratch/ to .git/info/exclude. Safe to run again; never
    changes a tracked file. Exit 2 outside a git repository.
    """
    from orchestrate.init import init_project
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
@executor_options
def run(dag_path: Path | None, topic: str | None, mode: str | None, jobs: int | None, quiet: bool,
        answers: Path | None, executor) -> int:
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
    from orchestrate.runner import run_campaign
    return run_campaign(Path.cwd(), dag_path, topic=topic, mode=mode, jobs=jobs, quiet=quiet, answers=answers,
                        executor=executor)


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight; several in flight: required).")
@click.option("--from-log", is_flag=True, help="Ignore checkpoints and rebuild the state from the journal alone.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Workers at once (default: one per CPU).")
@click.option("--quiet", "-q", is_flag=True, help="Print only results, seams, repairs and errors.")
@answers_option
@executor_options
def resume(topic: str | None, from_log: bool, jobs: int | None, quiet: bool, answers: Path | None, executor) -> int:
    """Continue the in-flight campaign after a crash, a Ctrl-C, a halt or a pause.

    Rebuilds the state from the newest valid checkpoint plus the journal after it, reconciles it with
    git (worktrees, branches, merges, workers the dead runner left, stale lock files), prints each
    repair, and continues. Exit codes as for `run`; 4 when another runner holds the campaign.
    """
    from orchestrate.runner import resume_campaign
    return resume_campaign(Path.cwd(), topic=topic, from_log=from_log, jobs=jobs, quiet=quiet, answers=answers,
                           executor=executor)


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
    from orchestrate.runner import decide as decide_seam
    return decide_seam(Path.cwd(), seam, choice, topic=topic, as_who=as_who, note=note, quiet=quiet)


def edge_answer_options(f):
    f = click.option("--quiet", "-q", is_flag=True, help="Print only the result.")(f)
    f = click.option("--note", default="", help="Why.")(f)
    f = click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")(f)
    f = click.option("--topic", help="Campaign topic (default: the one waiting at a seam).")(f)
    return click.option("--edge", required=True, metavar="EDGE", help="The id of the blocked edge, as in dag.yaml.")(f)


@cli.command()
@edge_answer_options
def approve(edge: str, topic: str | None, as_who: str | None, note: str, quiet: bool) -> int:
    """Cross EDGE, which a `block` guardrail stopped: its target is dispatched on `orchestrate resume`.

    Records a human decision (who: git config user.email, or --as; when; the note) citing the
    guardrail's recorded result, so `orchestrate why` shows who let the change through. The same as
    `orchestrate decide guardrail approve`. Refused with exit 2, nothing written, when EDGE is not the
    edge waiting at the guardrail seam or nobody can be named as the approver.
    """
    from orchestrate.runner import decide as decide_seam
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
    from orchestrate.runner import decide as decide_seam
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
    from orchestrate.runner import rediscover
    return rediscover(Path.cwd(), node, topic=topic, as_who=as_who, note=note, quiet=quiet)


@cli.command()
@click.option("--topic", help="Campaign topic (default: the one in flight).")
@json_option
def status(topic: str | None, as_json: bool) -> int:
    """Show the campaign's layer, every node's status and attempt, open seams, and why each waiting
    node waits."""
    from orchestrate.status import show
    print(show(Path.cwd(), topic, as_json))
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
    from orchestrate.demo import run as run_demo
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
        from orchestrate.runreplay import replay_campaign
        return replay_campaign(Path.cwd(), topic, recorder)
    if path is None:
        raise UsageError("give a transcript PATH, or --campaign TOPIC")
    from orchestrate.transcript import replay as replay_transcript
    return replay_transcript(path, update=update)


@cli.command()
def table() -> int:
    """Print the engine's transition table (state, outcome, next state, note) as Markdown."""
    from orchestrate.table import render
    click.echo(render())
    return ExitCode.OK


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
        from gates.core.dagfile import did_you_mean
        raise UsageError(f"no gate named `{name}`{did_you_mean(name, GATES)}",
                         hint="`orchestrate gate --help` lists them")
    return module(name).main(list(args[1:]), prog=f"orchestrate gate {name}")


def _report_bug(exc: BaseException) -> None:
    import traceback
    traceback.print_exception(exc)
    click.echo(f"orchestrate {__version__}: internal error ({type(exc).__name__}). This is a bug; "
               "please report it with the traceback above.", err=True)


def main(argv: list[str] | None = None) -> int:
    """The one error boundary: expected failures print one line; a bug prints a traceback (70)."""
    try:
        rc = cli.main(args=argv, prog_name="orchestrate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return ExitCode.USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("orchestrate: interrupted", err=True)
        return ExitCode.INTERRUPTED
    except OrchestrateError as exc:
        _print_error(exc)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the boundary: anything else is a bug
        _report_bug(exc)
        return ExitCode.INTERNAL
    finally:
        try:
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            pass
    return int(rc or 0)


def _print_error(exc: OrchestrateError) -> None:
    from gates.core.errors import DagInvalid
    if isinstance(exc, DagInvalid):
        for p in exc.problems:
            click.echo(str(p), err=True)
    click.echo(f"orchestrate: error: {exc}", err=True)


__all__ = ["cli", "main", "UsageError"]
