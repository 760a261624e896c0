"""The click group, the exit-code epilog of `--help`, and the options several commands share.

Heavy modules are imported inside the commands that need them so `orchestrate --version` starts fast.
"""
from __future__ import annotations

import functools
from pathlib import Path

import click

from orchestrate import __version__

EXIT_CODES_HELP = """\b
Examples:
  orchestrate init && orchestrate validate && orchestrate run
  orchestrate status
  orchestrate decide final-acceptance accept --note "read the diff"

\b
Exit codes:
  0    done
  1    a check failed, the DAG is invalid, or the campaign halted (the message says what to fix)
  2    usage error or unusable input (missing file, not a git repository); nothing was changed
  3    SERIALIZE (collision-check) or CONFLICT (trial-merge)
  4    another runner holds the campaign, or the recorder moved under this one
  70   internal error (a bug: please report it with the traceback)
  75   paused at a human seam (`orchestrate decide` answers it)
  130  interrupted by Ctrl-C, or SIGTERM to a runner (state is saved; `orchestrate resume`
       continues)"""


class HelpLast(click.Command):
    """A command whose docstring ends with its `Examples:` and `Exit codes:` paragraphs: --help prints them
    after the options, where the eye looks for them, as the group prints its exit codes."""

    def format_help(self, ctx, formatter) -> None:
        import inspect
        text = inspect.cleandoc(self.help or "")
        cut = min((i for i in (text.find("\b\nExamples:"), text.find("\b\nExit codes:")) if i >= 0),
                  default=len(text))
        saved = self.help, self.epilog
        own = self.epilog() if callable(self.epilog) else self.epilog  # callable: built only when asked for
        self.help, self.epilog = text[:cut].rstrip(), ((own or "") + "\n\n" + text[cut:]).strip()
        try:
            super().format_help(ctx, formatter)
        finally:
            self.help, self.epilog = saved


class _Group(click.Group):
    command_class = HelpLast


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_CODES_HELP)
@click.version_option(__version__, "-V", "--version", prog_name="orchestrate")
def cli() -> None:
    """Run a campaign: a DAG of workers, each in its own git worktree, judged by gates and merged
    into campaign/<topic> with --no-ff. Every transition is recorded in .ledger/ so a crashed or
    paused campaign resumes exactly where it stopped. Never pushes; never touches your checkout."""


def seams_help() -> str:
    """`decide --help`'s list of seams and their choices, from the one table that defines them."""
    from orchestrate.seams.choices import CHOICES
    width = max(map(len, CHOICES))
    return "\b\nSeams and their choices:\n" + "\n".join(f"  {seam:<{width}}  {', '.join(choices)}"
                                                        for seam, choices in CHOICES.items())


def _json():
    import json  # only the commands that print JSON pay for it
    return json


def dag_option(f):
    return click.option("--dag", "dag_path", type=click.Path(dir_okay=True, path_type=Path),
                        help="DAG file (default: .ledger/state/dag.yaml of the current repository).")(f)


TOPIC_HELP = "Campaign topic (default: the DAG's `topic:`, else the file's stem)."


def topic_refusal(value: str | None):
    """The UsageError for a --topic git could not name a branch after (None when it is fine): the option's
    fault, not that of the DAG file, which does not hold it."""
    from orchestrate.dag.schema import topic_problem
    from orchestrate.errors import UsageError
    problem = topic_problem(value) if value is not None else None
    return UsageError(f"--topic: {problem}", hint="topics name a branch, campaign/<topic>: e.g. --topic api-v2") \
        if problem else None


def new_topic_option(f):
    """--topic naming the campaign a DAG opens (`run`): refused at once when it cannot name a branch."""
    def check(_ctx, _param, value: str | None) -> str | None:
        if (refusal := topic_refusal(value)) is not None:
            raise refusal
        return value
    return click.option("--topic", callback=check, help=TOPIC_HELP)(f)


def not_empty(_ctx, _param, value: str | None) -> str | None:
    """The callback of a --topic naming a campaign: an empty one is refused (recorder/topics.refuse_empty)."""
    from orchestrate.recorder import topics
    return topics.refuse_empty(value)


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
            from orchestrate.recorder.locate import project
            from orchestrate.workers.executors import choose
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
    from orchestrate.recorder.locate import checkout
    from orchestrate.recorder.paths import Layout
    return Layout(checkout(Path.cwd())).default_dag


def edge_answer_options(f):
    f = click.option("--quiet", "-q", is_flag=True, help="Print only the result.")(f)
    f = click.option("--note", default="", help="Why.")(f)
    f = click.option("--as", "as_who", metavar="WHO", help="Who decides (default: git config user.email).")(f)
    f = click.option("--topic", help="Campaign topic (default: the one waiting at a seam).")(f)
    return click.option("--edge", required=True, metavar="EDGE", help="The id of the blocked edge, as in dag.yaml.")(f)
