"""`orchestrate demo`: a fresh repository built from the shipped demo, and its campaign run to the seam."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from orchestrate import git
from orchestrate.errors import ExitCode, UsageError
from orchestrate.recorder.init import init_project
from orchestrate.resources import shipped

README = """# demo project

A tiny repository for the orchestrate demo campaign.
"""
OLD_NOTES = "# Old notes\n\nKept for the red demo, which deletes this file.\n"


# The red demo's way out (README: The demo): a node that fixes the link joins the halted layer, as a
# person's amendment of the campaign's DAG; the layer's boundary then judges the repaired tree.
FIX_NODE = """\
  - {id: R3, title: "fix the guide's link", depends_on: [], file_surface: ["docs/guide.md"], discipline: core,
     serialize: true, brief: "docs/old.md is gone: make docs/guide.md stop linking to it."}
"""
RECOVERY = (
    "# to repair it: add a node that fixes the link to the halted layer, then resume",
    "cat demo/red-fix.yaml >> .ledger/state/red/dag.yaml   # R3: serialize, no depends_on: runs in layer 0",
    "{prog} resume                    # shows the change: seam dag-amendment",
    "{prog} decide dag-amendment accept --note 'R3 fixes the link'",
    "{prog} resume                    # R3 runs and merges; the boundary passes; final acceptance",
)


def build(target: Path | None, *, red: bool = False) -> Path:
    """A new git repository holding the demo's workers, with its recorder and DAG in place."""
    src = shipped("demo")
    repo = target or Path(tempfile.mkdtemp(prefix="orchestrate-demo-"))
    if repo.exists() and (not repo.is_dir() or any(repo.iterdir())):
        raise UsageError(f"{repo} is not empty" if repo.is_dir() else f"{repo} is a file",
                         hint="give a new or empty folder, or none for a temporary one")
    try:
        (repo / "demo").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the demo folder {repo}: {exc.strerror or exc}",
                         hint="give a folder that can be created, or none for a temporary one") from None
    shutil.copytree(src / "workers", repo / "demo" / "workers")
    (repo / "README.md").write_text(README)
    (repo / "docs").mkdir()
    (repo / "docs" / "old.md").write_text(OLD_NOTES)
    git.init_repo(repo)
    git.git(repo, "config", "user.name", "Demo Person")
    git.git(repo, "config", "user.email", "demo@example.com")
    git.commit_all(repo, "baseline: the demo project")
    init_project(repo)
    shutil.copyfile(src / ("red" if red else ".") / "dag.yaml", repo / ".ledger" / "state" / "dag.yaml")
    if red:  # the fix node of RECOVERY, ready to append; untracked, so the campaign never sees it unasked
        (repo / "demo" / "red-fix.yaml").write_text(FIX_NODE)
    git.commit_all(repo / ".ledger", "state: the demo campaign's plan")
    return repo


def run(target: Path | None, *, red: bool, quiet: bool, jobs: int | None) -> int:
    from orchestrate.engine.runner import run_campaign
    repo = build(target, red=red)
    print(f"demo repository: {repo}")
    answers = None if red else shipped("demo") / "answers.yaml"
    rc = run_campaign(repo, None, topic=None, mode=None, jobs=jobs, quiet=quiet, answers=answers)
    topic = "red" if red else "demo"
    expected = ExitCode.FAILED if red else ExitCode.PAUSED
    prog = _program()
    print()
    print("what to look at next:")
    print(f"  cd {repo}")
    print("  git -C .ledger log --oneline          # the recorder: one commit per transition")
    print(f"  git log --graph --oneline campaign/{topic}   # the campaign branch: one --no-ff merge per node")
    print(f"  {prog} status                    # every node, its attempts, open seams")
    report = sorted((repo / ".ledger" / "log").glob(f"*-{topic}.html"))
    if report:
        print(f"  open {report[-1].relative_to(repo)}   # the report: DAG, timeline, gates, decisions")
    else:
        print(f"  {prog} report                    # writes the report, .ledger/log/<date>-{topic}.html")
    if red:
        for line in RECOVERY:
            print(f"  {line.format(prog=prog)}")
    else:
        print(f"  {prog} decide final-acceptance accept --note 'looks right'   # accept the campaign")
    if rc == expected:
        return ExitCode.OK
    print(f"the demo did not end as designed (exit {rc})")
    return rc


def _program() -> str:
    """How to call this orchestrate again: its full path when it is not the one on PATH (a fresh venv)."""
    mine = Path(sys.executable).parent / "orchestrate"
    found = shutil.which("orchestrate")
    if mine.exists() and (found is None or Path(found).resolve() != mine.resolve()):
        return str(mine)
    return "orchestrate"
