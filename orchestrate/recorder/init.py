"""`orchestrate init`: create the recorder (`.ledger/`, a nested git repository) from the template."""
from __future__ import annotations

import shutil
from pathlib import Path

from orchestrate import git
from orchestrate.atomic import write_atomic
from orchestrate.errors import UsageError
from orchestrate.recorder.paths import Layout
from orchestrate.resources import shipped

EXCLUDES = (".ledger/", ".scratch/")


def init_project(cwd: Path) -> tuple[Layout, list[str]]:
    """Create the recorder if it is missing, write the starter plan unless a plan exists, and exclude
    both from the project; return what was done.

    Idempotent: an existing recorder and plan are left as they are. Never touches a tracked file of the
    project.
    """
    from orchestrate.recorder.locate import checkout
    layout = Layout(checkout(cwd))
    done: list[str] = []
    ledger = layout.ledger
    if git.is_repo_root(ledger):
        if git.rev_parse(ledger, "HEAD") is None:
            _first_commit(ledger)
            done.append(f"made the first commit in {ledger}")
    elif ledger.is_symlink() or (ledger.exists() and (not ledger.is_dir() or any(ledger.iterdir()))):
        kind = "a link" if ledger.is_symlink() else "a folder" if ledger.is_dir() else "a file"
        raise UsageError(f"{ledger} exists ({kind}) and is not a recorder repository",
                         hint="move it away, then run `orchestrate init` again")
    else:
        shutil.copytree(shipped("ledger-template"), ledger, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "dag.yaml"))  # the plan: below
        git.init_repo(ledger)
        _first_commit(ledger)
        done.append(f"created the recorder {ledger}")
    if not layout.default_dag.exists():
        starter = shipped("ledger-template") / "state" / "dag.yaml"
        write_atomic(layout.default_dag, starter.read_text(encoding="utf-8"))
        done.append(f"wrote a starter plan {layout.default_dag} (two nodes; edit it, then `orchestrate validate`)")
    added = _exclude(layout.root)
    if added:
        done.append(f"added {', '.join(added)} to .git/info/exclude")
    return layout, done


def _first_commit(ledger: Path) -> None:
    git.commit_all(ledger, "log: init recorder", env=git.identity_env(ledger), allow_empty=True)


def excluded(root: Path) -> set[str]:
    """The entries of the repository at `root`'s .git/info/exclude, each without a trailing `/`."""
    try:
        return _entries((git.git_common_dir(root) / "info" / "exclude").read_text(errors="replace"))
    except OSError:  # none (or none readable): nothing is excluded there
        return set()


def _entries(text: str) -> set[str]:
    return {ln.strip().rstrip("/") for ln in text.splitlines()}


def _exclude(root: Path) -> list[str]:
    exclude = git.git_common_dir(root) / "info" / "exclude"
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        data = exclude.read_bytes() if exclude.exists() else b""
    except (FileExistsError, NotADirectoryError, IsADirectoryError):  # git's own layout, not ours to move
        raise UsageError(f"{exclude}: cannot add .ledger/ and .scratch/ to it: a folder or a file is in the way",
                         hint="make .git/info a folder and .git/info/exclude a file, then run `orchestrate init` "
                              "again") from None
    text = data.decode("utf-8", errors="surrogateescape")  # a comment in Latin-1 is kept byte for byte
    present = _entries(text)
    missing = [e for e in EXCLUDES if e.rstrip("/") not in present]
    if missing:
        prefix = "" if not text or text.endswith("\n") else "\n"
        write_atomic(exclude, (text + prefix + "".join(f"{m}\n" for m in missing)).encode("utf-8", "surrogateescape"))
    return missing
