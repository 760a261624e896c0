"""Reading a DAG file: `load_dag(path)` returns a `Dag` or raises `DagInvalid` carrying a `Problem` per
violation (file, line, field, fix); input that cannot be read at all raises `UsageError` (exit 2)."""
from __future__ import annotations

import gc
import os
import stat
from contextlib import contextmanager
from pathlib import Path

from orchestrate.dag import yamlfile
from orchestrate.dag.model import Dag
from orchestrate.dag.validate import validate
from orchestrate.dag.yamlfile import Problem
from orchestrate.errors import DagInvalid, UsageError


def missing(path: Path) -> UsageError:
    """The error for a DAG file that is not there: in a project without a recorder, `init` writes one."""
    ledger = path.parent.parent
    if path.parent.name == "state" and ledger.name == ".ledger" and not (ledger / ".git").exists():
        return UsageError(f"{path}: no such DAG file", hint="run `orchestrate init` first: it writes a starter plan "
                                                            "there")
    return UsageError(f"{path}: no such DAG file", hint="create it, or pass --dag PATH")


_MOST = 1 << 30  # bytes: a 100,000-node plan is tens of megabytes; a stream that never ends (/dev/zero) is not one


def read_text(path: str | Path) -> str:
    """The DAG file's text: a regular file, or a pipe (`--dag <(make-plan)`) that ends within `_MOST` bytes."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise UsageError(f"{p}: is a device or socket, not a DAG file", hint="pass --dag PATH to a YAML file")
            data = fh.read(_MOST + 1)
        if len(data) > _MOST:
            raise UsageError(f"{p}: more than {_MOST >> 20} MiB, not a DAG file", hint="pass --dag PATH to a YAML file")
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads it
    except FileNotFoundError:
        raise missing(p) from None
    except IsADirectoryError:
        raise UsageError(f"{p}: is a directory, not a DAG file", hint="pass --dag PATH to a YAML file") from None
    except PermissionError:
        raise UsageError(f"{p}: permission denied", hint="make the file readable") from None
    except NotADirectoryError:  # a folder on its path is a file (`.ledger` itself, say)
        raise UsageError(f"{p}: a folder on this path is a file", hint="pass --dag PATH to a YAML file") from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read the DAG: {exc.strerror or exc}", hint="pass --dag PATH to a YAML file") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1  # the line to open in an editor, as every other problem names
        raise UsageError(f"{p}:{line}: not UTF-8 text (byte {exc.start})", hint="save the DAG as UTF-8") from None


def check_dag(path: str | Path, *, topic: str | None = None,
              brief_dir: Path | None = None) -> tuple[Dag | None, list[Problem]]:
    """Read and validate; UsageError only when the file cannot be read at all.

    `brief_dir` resolves `brief_file` paths when the DAG was copied away from its own folder.
    """
    file = str(path)
    text = read_text(path)
    with _Progress(file, text) as progress, _collector_paused():
        data, problems = yamlfile.load(text, file)
        if data is None and problems:  # unparsable; no data at all (an empty file) is validate's to report
            return None, problems
        progress.validating(data)
        dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
        if more and getattr(data, "fast", False):  # read as JSON, without lines: read again to point at them
            progress.phase = "reading it again for line numbers"
            data, problems = yamlfile.load(text, file, fast=False)
            progress.validating(data)
            dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
    if problems:  # duplicate keys make the data untrustworthy even if the rest validates
        return None, sorted(problems + more, key=lambda p: (p.line, p.field))
    return dag, more


@contextmanager
def _collector_paused():
    """Reading a DAG allocates a few containers per node and frees none until the end, so each of
    Python's generation-2 collections rescans every object made so far: at 100k nodes they were a
    quarter of the time. Nothing built here forms a reference cycle that needs the collector."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Progress:
    """A DAG over `LARGE` nodes takes seconds to read and check: on a terminal, one line on stderr says
    what is happening and for how long, and is wiped when done. Off a terminal, nothing."""

    LARGE = 2000
    EVERY = 0.5  # seconds between redraws

    def __init__(self, file: str, text: str) -> None:
        import sys
        self.file, self.phase, self._stop = Path(file).name, "reading", None
        rough = max(text.count("id:"), text.count('"id"'))  # an upper estimate, before parsing
        self.shown = rough > self.LARGE and sys.stderr is not None and sys.stderr.isatty()

    def validating(self, data: object) -> None:
        nodes = data.get("nodes") if isinstance(data, dict) else None
        self.phase = f"checking {len(nodes):,} nodes" if isinstance(nodes, list) else "checking"
        if self._stop is not None:
            self._draw()  # at once: the next tick may be after the work is done

    def _draw(self) -> None:
        import time
        self._write(f"\r\x1b[K{self.file}: {self.phase} ({time.monotonic() - self._start:.0f}s)")

    def __enter__(self) -> "_Progress":
        if self.shown:
            import threading
            import time
            self._stop, self._start = threading.Event(), time.monotonic()

            def draw() -> None:
                while True:
                    self._draw()
                    if self._stop.wait(self.EVERY):
                        return
            self._thread = threading.Thread(target=draw, name="validate-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
            self._write("\r\x1b[K")

    @staticmethod
    def _write(text: str) -> None:
        import sys
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # a terminal that went away: the check itself goes on


def base_problem(dag: Dag, root: Path) -> Problem | None:
    """A written `base:` that names no commit in `root`, at its line. Asked apart from the contract: git
    answers it only inside the repository the campaign would start in (`validate --dag` elsewhere has none)."""
    from orchestrate import git
    if git.rev_parse(root, dag.base) is not None or git.rev_parse(root, "HEAD") is None:
        return None  # no commit at all is the repository's to fix, and the run says so in its own words
    data, _ = yamlfile.load(read_text(dag.path), dag.path, fast=False)  # read again: the Dag keeps no lines
    if not isinstance(data, yamlfile.Mapping) or "base" not in data:
        return None
    return Problem(dag.path, data.key_line("base"), "base", "unknown-base",
                   f"`{dag.base}` does not name a commit in {root}; name a branch, tag or commit there "
                   "(`git log` lists them)")


def load_dag(path: str | Path, *, topic: str | None = None, brief_dir: Path | None = None) -> Dag:
    dag, problems = check_dag(path, topic=topic, brief_dir=brief_dir)
    if dag is None:
        raise DagInvalid(problems, str(path))
    return dag


def plugin_problem(dag: Dag, plugin: str, why: str) -> Problem:
    """A gate plugin that cannot be used, at the first line naming it: a `gates:` entry's `plugin:`, or the `to:`
    of an EXTENDS edge (`plugin:<name>`)."""
    data, _ = yamlfile.load(read_text(dag.path), dag.path, fast=False)  # read again: the Dag keeps no lines
    fix = "install it, or name one that `orchestrate plugins` lists"
    gates = data.get("gates") if isinstance(data, yamlfile.Mapping) else None
    for name, spec in (gates.items() if isinstance(gates, yamlfile.Mapping) else ()):
        if isinstance(spec, yamlfile.Mapping) and spec.get("plugin") == plugin:
            return Problem(dag.path, spec.key_line("plugin"), f"gates.{name}.plugin", "plugin", f"{why}; {fix}")
    edges = data.get("edges") if isinstance(data, yamlfile.Mapping) else None
    for i, edge in enumerate(edges if isinstance(edges, yamlfile.Sequence) else ()):
        if isinstance(edge, yamlfile.Mapping) and edge.get("to") == f"plugin:{plugin}":
            return Problem(dag.path, edge.key_line("to"), f"edges[{i}].to", "plugin", f"{why}; {fix}")
    return Problem(dag.path, 0, "", "plugin", f"{why}; {fix}")
