"""The user's checkout is looked at (a `git status` of all of it) only around workers that could write it
(engine/watch.py): a campaign whose workers all run in the bubblewrap sandbox never looks, one without the
sandbox looks around every worker, and a writable folder configured inside the checkout makes a sandboxed
worker one that could write it. Real bwrap, real workers, the CLI in-process so the looks can be counted."""
from __future__ import annotations

import pytest

from orchestrate.workers import fingerprint, sandbox
from tests.engine_helpers import campaign_repo, statuses

REASON = sandbox.probe()
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")

DAG = """\
topic: sealed
mode: autonomous
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""
WORKER = """#!/bin/sh
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
if [ -n "$STRAY" ]; then echo x > "$STRAY" 2>/dev/null || true; fi
git add -A && git commit -qm "$ORCH_NODE"
"""


@pytest.fixture
def looks(monkeypatch):
    taken: list[int] = []
    real = fingerprint._checkout

    def counted(root):
        taken.append(1)
        return real(root)
    monkeypatch.setattr(fingerprint, "_checkout", counted)
    return taken


def configure(repo, mode: str, writable: list[str] | None = None) -> None:
    config = repo / ".ledger" / "config.yaml"
    extra = f", writable: [{', '.join(writable)}]" if writable is not None else ""
    config.write_text(config.read_text() + f"\nsandbox: {{mode: {mode}{extra}}}\n")


@needs_bwrap
def test_sandboxed_workers_never_have_the_checkout_looked_at(tmp_path, orch, looks):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    configure(repo, "bwrap")
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "sealed") == {"A": "ACCEPTED", "B": "ACCEPTED"}
    assert looks == []


def test_workers_without_the_sandbox_have_it_looked_at_around_each_one(tmp_path, orch, looks):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    configure(repo, "none")
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert len(looks) >= 2  # at least at each return (the start's look may be the last return's)


@needs_bwrap
def test_a_writable_folder_inside_the_checkout_brings_the_looks_back_and_a_write_there_is_reported(
        tmp_path, orch, looks, monkeypatch):
    repo = campaign_repo(tmp_path, DAG, WORKER)
    (repo / "cache").mkdir()
    configure(repo, "bwrap", [str(repo / "cache")])
    monkeypatch.setenv("STRAY", str(repo / "cache" / "stray.txt"))
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert (repo / "cache" / "stray.txt").exists()  # the sandbox let it through: the folder is writable
    assert "warning: the checkout changed while A ran" in result.out + result.err
    assert len(looks) >= 2


EVALUATED = """\
topic: sealed
mode: autonomous
schedule: eager
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt, check.sh], discipline: sh, evaluators: [{name: mine, run: "sh check.sh"}]}
  - {id: B, file_surface: [b.txt], discipline: sh}
"""
EVALUATED_WORKER = """#!/bin/sh
if [ "$ORCH_NODE" = A ]; then
  echo A > a.txt
  printf 'echo x > "%s/stray.txt" || true\\n' "$STRAY_ROOT" > check.sh
else
  echo B > b.txt
fi
git add -A && git commit -qm "$ORCH_NODE"
"""


@needs_bwrap
def test_an_evaluator_of_a_sandboxed_node_runs_in_the_sandbox_and_cannot_write_the_checkout(tmp_path, orch, monkeypatch):
    """Evaluators run code a worker wrote: where the node is sandboxed, so are they (workers/containment.py
    `judging`), and the checkout is read-only to them as to the worker."""
    repo = campaign_repo(tmp_path, EVALUATED, EVALUATED_WORKER)
    configure(repo, "bwrap")
    monkeypatch.setenv("STRAY_ROOT", str(repo))
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert not (repo / "stray.txt").exists()
    assert "the checkout changed" not in result.out + result.err


GIT_DIR_WORKER = """#!/bin/sh
echo A > a.txt
git add -A && git commit -qm A
printf 'ref: refs/heads/elsewhere\\n' > "$(git rev-parse --path-format=absolute --git-common-dir)/HEAD"
"""


@needs_bwrap
def test_a_writable_git_dir_is_not_sealed_and_a_switched_head_is_reported(tmp_path, orch, looks):
    repo = campaign_repo(tmp_path, DAG.replace("  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}\n",
                                               ""), GIT_DIR_WORKER)
    configure(repo, "bwrap", [str(repo / ".git")])
    result = orch("run", cwd=repo)
    assert (repo / ".git" / "HEAD").read_text() == "ref: refs/heads/elsewhere\n"  # the folder was writable
    assert "warning: the checkout changed while A ran" in result.out + result.err


WAITING = """#!/bin/sh
run="$(dirname "$ORCH_RETURN")"
if [ "$ORCH_NODE" = A ]; then  # waits for the person's edit
  touch "$run/started"
  while [ ! -e "$run/go" ]; do sleep 0.05; done
fi
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
git add -A && git commit -qm "$ORCH_NODE"
"""
ONE = """\
topic: sealed
mode: autonomous
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
"""


def _edit_while_a_runs(repo, path, text: str | None):
    """A person's edit of `path` (appending `text`; None: deleting it) once A has started; A goes on after it."""
    import threading
    import time

    def person() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            started = list((repo / ".scratch").rglob("started"))
            if started:
                path.unlink() if text is None else path.write_text(path.read_text() + text)
                (started[0].parent / "go").touch()
                return
            time.sleep(0.05)
    editor = threading.Thread(target=person)
    editor.start()
    return editor


@needs_bwrap
@pytest.mark.parametrize("edit,said", [
    ("coherence: {timeout: 900}\n", "was edited while only workers in the sandbox ran (A; they cannot write it): "
     "kept; what the run reads of it from now on follows it"),
    ("coherence: {timeout: soon}\n", "has a problem (coherence.timeout: "),
    ("coherence: [\n", "has a problem (malformed YAML"),
    (None, "was deleted while only workers in the sandbox ran (A; they cannot write it): the defaults hold"),
])
def test_a_persons_edit_of_the_settings_while_only_sandboxed_workers_run_is_blamed_on_no_worker(tmp_path, orch,
                                                                                               edit, said):
    """config.yaml, like the plan, is read-only in the sandbox: an edit while only such workers run is a
    person's. A valid one (or a deletion) is kept; one with problems is put back (a bad setting is never met
    halfway), the edit kept aside. Either way the worker's attempt stands."""
    repo = campaign_repo(tmp_path, ONE, WAITING)
    configure(repo, "bwrap")
    config = repo / ".ledger" / "config.yaml"
    before = config.read_text()
    editor = _edit_while_a_runs(repo, config, edit)
    result = orch("run", cwd=repo)
    editor.join()
    text = result.out + result.err
    assert said in text, text
    assert result.rc == 75 and "final-acceptance" in text and "changed what no worker may change" not in text, text
    assert statuses(repo, orch, "sealed") == {"A": "ACCEPTED"}
    if "has a problem" in said:
        aside = repo / ".scratch" / "rejected" / "sealed" / "config.yaml"
        assert config.read_text() == before and aside.read_text() == before + edit
    else:
        assert config.read_text() == before + edit if edit else not config.exists()


@needs_bwrap
def test_a_persons_edit_of_the_plan_while_only_sandboxed_workers_run_waits_for_the_amendment_seam(tmp_path, orch):
    """`.ledger/` is read-only in the sandbox: an edit of the campaign's DAG while only such workers run is a
    person's, not the worker's. It is neither blamed on the worker nor put back, and the dag-amendment seam
    shows it (a worker without the sandbox that edits the plan is blamed: test_hostile_workers)."""
    repo = campaign_repo(tmp_path, ONE, WAITING)
    configure(repo, "bwrap")
    copy = repo / ".ledger" / "state" / "sealed" / "dag.yaml"
    editor = _edit_while_a_runs(repo, copy, "  - {id: B, file_surface: [b.txt], discipline: sh}\n")
    result = orch("run", cwd=repo)
    editor.join()
    text = result.out + result.err
    assert "was edited while only workers in the sandbox ran (A; they cannot write it): kept for the dag-amendment seam" in text
    assert result.rc == 75 and "dag-amendment" in text, text
    assert "changed what no worker may change" not in text and "id: B" in copy.read_text()
    assert orch("decide", "dag-amendment", "accept", "--as", "p@example.com", cwd=repo).rc == 0
    again = orch("resume", cwd=repo)
    assert again.rc == 75 and "final-acceptance" in again.out, again.out + again.err
    assert statuses(repo, orch, "sealed") == {"A": "ACCEPTED", "B": "ACCEPTED"}
