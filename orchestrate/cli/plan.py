"""Commands on the plan: `validate`, `layers`, `show` and `table`.
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import TOPIC_HELP, _json, cli, dag_option, json_option, resolve_dag_path, topic_refusal
from orchestrate.errors import ExitCode, UsageError
from orchestrate.printable import printable


@cli.command(short_help="Check the DAG and config.yaml against every rule")
@dag_option
@json_option
@click.option("--topic", help=TOPIC_HELP)
def validate(dag_path: Path | None, as_json: bool, topic: str | None) -> int:
    """Check the DAG against every rule of its contract, and .ledger/config.yaml, and list all problems
    at once.

    Each problem is one line `file:line: field: message` with what to change. With --json, prints a
    list of {file, line, field, code, message} (empty when valid). Every plugin the DAG names must be
    installed and protocol-compatible (`orchestrate plugins` lists them). The project's config.yaml
    (unknown settings, with "did you mean", and each section as the run reads it) is checked too, and,
    inside the repository, that the DAG's `base:` names one of its commits.

    \b
    Examples:
      orchestrate validate
      orchestrate validate --dag plans/api.yaml --json

    \b
    Exit codes:
      0  valid
      1  invalid (every problem is listed), or a named plugin is unusable
      2  the DAG file cannot be read, --topic cannot name a branch (with --json listed as the
         problem of `--topic`), or not in a git repository without --dag
    """
    from orchestrate.dag.load import check_dag
    if (refusal := topic_refusal(topic)) is not None:
        if not as_json:
            raise refusal
        click.echo(_json().dumps([{"file": None, "line": None, "field": "--topic", "code": "topic",
                                   "message": refusal.message}], indent=2))
        return ExitCode.USAGE  # as without --json: the output's form does not change what went wrong (§10)
    from orchestrate.recorder.topics import brief_dir
    path = resolve_dag_path(dag_path)
    dag, problems = check_dag(path, topic=topic, brief_dir=brief_dir(path))
    if dag is not None and (wrong := _base_problem(dag)) is not None:  # else `run` is the first to say it
        dag, problems = None, [wrong]
    settings = _config_problems()
    if dag is not None:
        from orchestrate.engine import plugin_gates as plugingates
        _, unusable = plugingates.problems(dag, lambda m: click.echo(f"warning: {m}", err=True))  # each must load
        if unusable:
            dag, problems = None, unusable
    listed = (problems if dag is None else []) + settings
    if as_json:
        click.echo(_json().dumps([p.as_dict() for p in problems + settings], indent=2))
    else:
        for p in listed:
            click.echo(printable(str(p)))
    if listed and not as_json:
        files = ", ".join(dict.fromkeys(p.file for p in listed))
        click.echo(f"invalid: {len(listed)} problem(s) in {files}", err=True)
    if dag is not None and not as_json:
        for note in _dialect_notes(path, dag):
            click.echo(printable(note), err=True)
    if dag is not None and not settings and not as_json:
        layers = dag.layers()
        click.echo(f"valid: {path} ({len(dag.nodes)} node{'s' * (len(dag.nodes) != 1)}, {len(layers)} "
                   f"layer{'s' * (len(layers) != 1)}, topic {dag.topic})")
    return ExitCode.OK if dag is not None and not settings else ExitCode.FAILED


def _dialect_notes(path: Path, dag) -> list[str]:
    """`note:` lines for surface tokens that another glob dialect would read otherwise, or that name a
    `.gitattributes` they cannot grant (valid, but a person who thinks in fnmatch or shell globs should know)."""
    from orchestrate.dag import surface
    lines = None
    notes = []
    for node in dag.nodes:
        for j, token in enumerate(node.file_surface):
            for said in filter(None, (surface.dialect_note(token), surface.reach_note(token))):
                lines = lines if lines is not None else _surface_lines(path)
                line = lines.get((node.id, j))
                notes.append(f"note: {path}{f':{line}' if line else ''}: nodes.{node.id}.file_surface: {said}")
    return notes


def _surface_lines(path: Path) -> dict:
    """(node id, index) -> the line of that `file_surface` entry, from the YAML nodes themselves: the
    text as written may quote or escape a token (`"q/a\\\\*"`), so searching it for the token misses."""
    from orchestrate.dag import yamlfile
    from orchestrate.dag.load import read_text
    data, _ = yamlfile.load(read_text(path), str(path), fast=False)
    found = {}
    for raw in data.get("nodes") or () if isinstance(data, dict) else ():
        tokens = raw.get("file_surface") if isinstance(raw, dict) else None
        if isinstance(tokens, yamlfile.Sequence):  # a valid DAG's entries are all kept, in order
            found.update({(str(raw.get("id")), j): tokens.item_line(j) for j in range(len(tokens))})
    return found


def _base_problem(dag):
    """The DAG's `base:` if it names no commit of the repository here; none outside one."""
    from orchestrate.dag.load import base_problem
    from orchestrate.recorder.locate import checkout
    try:
        return base_problem(dag, checkout(Path.cwd()))
    except UsageError:  # not in a repository: the contract alone is checked
        return None


def _config_problems() -> list:
    """config.yaml of the project here, read by the readers a run uses; none outside a repository."""
    from orchestrate.engine import settings
    from orchestrate.errors import UsageError as NotHere
    from orchestrate.recorder.locate import checkout
    from orchestrate.recorder.paths import Layout
    try:
        layout = Layout(checkout(Path.cwd()))
    except NotHere:
        return []
    return settings.problems(layout)


@cli.command(short_help="Print the schedule: the DAG's layers")
@dag_option
@json_option
def layers(dag_path: Path | None, as_json: bool) -> int:
    """Print the schedule: Kahn layers in natural id order, each split into its parallel set and its
    serial rest. Nodes with `complete: true` are settled and never appear. The DAG must be valid.

    With --json, prints exactly {"layer_count": N, "layers": [[...], ...]}.

    \b
    Examples:
      orchestrate layers
      orchestrate layers --dag plans/api.yaml --json

    \b
    Exit codes:
      0  printed
      1  the DAG is invalid (`orchestrate validate` lists why)
      2  the DAG file cannot be read
    """
    from orchestrate.dag.load import load_dag
    from orchestrate.recorder.topics import brief_dir
    path = resolve_dag_path(dag_path)
    dag = load_dag(path, brief_dir=brief_dir(path))
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


@cli.command(short_help="What the DAG derives for one node")
@click.argument("node")
@dag_option
@click.option("--gates", "only_gates", is_flag=True, help="Print only the gates, one per line.")
@click.option("--group", "only_group", is_flag=True, help="Print only the LOOPS_WITH group, one id per line.")
@json_option
def show(node: str, dag_path: Path | None, only_gates: bool, only_group: bool, as_json: bool) -> int:
    """What the DAG derives for NODE: its layer, ordering predecessors, LOOPS_WITH group and the gates
    that judge it (its own, its COMPOSES spokes' transitively, its EXTENDS actions and its group peers',
    each once, plus the implicit outputs-present and payload-present(<edge>) contracts).

    \b
    Examples:
      orchestrate show D2
      orchestrate show D2 --gates

    \b
    Exit codes:
      0  printed
      1  the DAG is invalid
      2  the DAG declares no such node, or its file cannot be read
    """
    from orchestrate.dag.load import load_dag
    from orchestrate.dag.schema import did_you_mean
    from orchestrate.recorder.topics import brief_dir
    path = resolve_dag_path(dag_path)
    dag = load_dag(path, brief_dir=brief_dir(path))
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


@cli.command(short_help="Print the engine's transition table")
def table() -> int:
    """Print the engine's transition table (state, outcome, next state, note) as Markdown.

    \b
    Examples:
      orchestrate table
      orchestrate table > transitions.md

    \b
    Exit codes:
      0  printed
    """
    from orchestrate.engine.table import render
    click.echo(render())
    return ExitCode.OK
