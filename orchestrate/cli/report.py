"""Commands that draw a campaign: `report` (one self-contained HTML file) and `graph` (Mermaid, DOT, text).
"""
from __future__ import annotations

from pathlib import Path

import click

from orchestrate.cli.app import cli, not_empty
from orchestrate.errors import ExitCode, UsageError


@cli.command(short_help="Write the campaign's HTML report")
@click.option("--topic", help="Campaign topic (default: as for `status`, the one in flight or paused; "
                               "when every one has ended, the newest; several: listed).")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the HTML, in a folder that exists (default: .ledger/log/<date>-<topic>.html, "
                   "beside the sketch).")
def report(topic: str | None, output: Path | None) -> int:
    """Write the campaign's report: one self-contained HTML file (no network, no script) with the DAG
    coloured by status, a timeline of every attempt (queued, running, judging, merging; reworks and
    seams marked; the critical path outlined; makespan against its lower bound), every node's gate
    verdicts, surface, merge and diffstat, seams and decisions, and links to its logs.

    Works for a finished campaign and for one in flight; CLOSE writes it by itself. Reads only the
    recorder and git. Prints the file's path.

    \b
    Examples:
      orchestrate report
      orchestrate report --topic api-v2 -o /tmp/api-v2.html

    \b
    Exit codes:
      0  written
      1  the journal holds a line orchestrate did not write (the first is named; `orchestrate
         doctor` lists them all)
      2  unknown campaign, none started, several in flight or paused and no --topic (listed,
         newest first), no recorder here, or -o names a file that cannot be written (a folder
         that does not exist is not created)
    """
    from orchestrate.recorder import damage, topics
    from orchestrate.recorder.locate import project
    from orchestrate.report import html
    if output is not None:
        _check_output(output)
    layout = project(Path.cwd())
    name = topics.pick(layout.ledger, topic, newest_ended=True)
    damage.refuse(layout.journal(name), "no report was written")  # a run's own (at CLOSE) is guarded as it goes
    path = html.write(layout, name, output)
    click.echo(str(path))
    return ExitCode.OK


def _check_output(output: Path) -> None:
    """-o in a folder that is not there is refused, not created: a typo in the path would otherwise leave
    a tree of folders behind, and the report where nobody looks."""
    folder = output.parent
    if not folder.exists():
        raise UsageError(f"{output}: no folder {folder}", hint="create it first, or pass -o in a folder that exists")
    if not folder.is_dir():
        raise UsageError(f"{output}: {folder} is not a folder", hint="pass -o FILE in a folder")
    if output.exists() and not output.is_file():  # the report replaces the file whole: run as root, `-o /dev/full`
        raise UsageError(f"{output}: not a regular file (a device, pipe or socket), which the report would replace",
                         hint="pass -o FILE naming a regular file, or a new one")  # turned the device into a file


@cli.command(short_help="Print the DAG as text, Mermaid or DOT")
@click.option("--dag", "dag_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Draw this DAG file (no statuses).")
@click.option("--topic", callback=not_empty, help="Draw this campaign's DAG with its nodes' statuses (default: the one in flight "
                              "or paused, final acceptance included; else .ledger/state/dag.yaml, without "
                              "statuses).")
@click.option("--format", "fmt", type=click.Choice(["mermaid", "dot", "text"]), default="text", show_default=True,
              help="mermaid: starts with `flowchart`, pastes into GitHub Markdown; dot: Graphviz; text: the terminal.")
def graph(dag_path: Path | None, topic: str | None, fmt: str) -> int:
    """Print the DAG: layers as columns, edges with their predicate (conditional edges as taken, untaken or
    undecided), LOOPS_WITH groups; for a campaign, each node's status as a word in its label (`D1 accepted`).
    Layers are numbered as `orchestrate layers` numbers them: `complete: true` nodes are drawn in a band
    of their own ahead of layer 0, headed "complete (settled before the run, in no layer)".

    \b
    Examples:
      orchestrate graph
      orchestrate graph --topic api-v2 --format mermaid
      orchestrate graph --dag plans/api.yaml --format dot | dot -Tsvg > dag.svg

    \b
    Exit codes:
      0  printed
      1  the DAG is invalid, or the campaign's journal holds a line orchestrate did not write (the
         first is named; `orchestrate doctor` lists them all)
      2  unreadable file, unknown campaign, or several in flight or paused and no --topic
    """
    from orchestrate.report import graph_export
    from orchestrate.report.shape import shape
    if dag_path is not None and topic:
        raise UsageError("--dag and --topic name two different graphs", hint="pass one of them")
    status, decided = None, None
    if dag_path is None:
        dag, status, decided, name = _campaign_or_default(topic)
    else:
        from orchestrate.dag.load import load_dag
        from orchestrate.recorder.topics import brief_dir
        dag = load_dag(dag_path, brief_dir=brief_dir(dag_path))
        name = dag.topic
    # a plan's `complete: true` nodes are settled before it runs (`layers` leaves them out): they get a
    # band of their own, so layer k here is layer k of `layers` and `show`
    picture = shape(dag, decided, settle=True)
    status = status or ({n.id: "COMPLETE" for n in dag.nodes if n.complete} or None)
    if fmt == "mermaid":
        click.echo(graph_export.mermaid(picture, status), nl=False)
    elif fmt == "dot":
        click.echo(graph_export.dot(picture, status, name), nl=False)
    else:
        click.echo(graph_export.text(picture, status), nl=False)
    return ExitCode.OK


def _campaign_or_default(topic: str | None):
    """(dag, statuses, edge decisions, name): a named campaign, else the one not yet ended (in flight, paused
    at any seam, final acceptance included, or halted: the rule resume and status use), else the default DAG."""
    from orchestrate.dag.load import load_dag
    from orchestrate.recorder import damage, topics
    from orchestrate.recorder.locate import project
    from orchestrate.report import html
    layout = project(Path.cwd())
    if topic is None:
        flying = topics.open_topics(layout.ledger)
        if len(flying) > 1:
            raise UsageError(f"several campaigns are in flight or paused: {', '.join(flying)}", hint="pass --topic")
        if not flying:
            dag = load_dag(layout.default_dag)
            return dag, None, None, dag.topic
        topic = flying[0]
    damage.refuse(layout.journal(topic), "no graph was drawn")  # folded whole, as `report` folds it
    data = html.collect(layout, topic)
    return data.dag, html.statuses(data.campaign, data.dag), data.campaign.edges, topic
