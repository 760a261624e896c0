"""Reading a DAG file: `load_dag(path)` returns a `Dag` or raises `DagInvalid` carrying a `Problem` per
violation (file, line, field, fix); input that cannot be read at all raises `UsageError` (exit 2)."""
from __future__ import annotations

from pathlib import Path

from orchestrate.dag import yamlfile
from orchestrate.dag.model import Dag
from orchestrate.dag.validate import validate
from orchestrate.dag.yamlfile import Problem
from orchestrate.errors import DagInvalid, UsageError


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such DAG file", hint="create it, or pass --dag PATH") from None
    except IsADirectoryError:
        raise UsageError(f"{p}: is a directory, not a DAG file", hint="pass --dag PATH to a YAML file") from None
    except PermissionError:
        raise UsageError(f"{p}: permission denied", hint="make the file readable") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: not UTF-8 text (byte {exc.start})", hint="save the DAG as UTF-8") from None


def check_dag(path: str | Path, *, topic: str | None = None,
              brief_dir: Path | None = None) -> tuple[Dag | None, list[Problem]]:
    """Read and validate; UsageError only when the file cannot be read at all.

    `brief_dir` resolves `brief_file` paths when the DAG was copied away from its own folder.
    """
    file = str(path)
    text = read_text(path)
    data, problems = yamlfile.load(text, file)
    if data is None and problems:  # unparsable; no data at all (an empty file) is validate's to report
        return None, problems
    dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
    if more and getattr(data, "fast", False):  # read as JSON, without lines: read again to point at them
        data, problems = yamlfile.load(text, file, fast=False)
        dag, more = validate(data, file, topic=topic, brief_dir=brief_dir)
    if problems:  # duplicate keys make the data untrustworthy even if the rest validates
        return None, sorted(problems + more, key=lambda p: (p.line, p.field))
    return dag, more


def load_dag(path: str | Path, *, topic: str | None = None, brief_dir: Path | None = None) -> Dag:
    dag, problems = check_dag(path, topic=topic, brief_dir=brief_dir)
    if dag is None:
        raise DagInvalid(problems, str(path))
    return dag
