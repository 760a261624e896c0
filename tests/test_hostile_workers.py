"""Workers that misbehave on purpose, the way agents do by accident (DESIGN §14.2, invariant 7): each
misdeed is caught naming the node, nothing of it reaches campaign/<topic>, the user's `.git` is left as it
was, and the campaign never wedges. Every test runs twice: in the bubblewrap sandbox (where most misdeeds
fail at once: the paths are read-only) and with `sandbox: none` (where orchestrate must detect them)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from tests import engine_helpers
from tests.engine_helpers import checkout_state, journal, statuses

DAG = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - id: A
    file_surface: [a.txt]
    discipline: sh
    evaluators: [EVALUATORS]
"""


@pytest.fixture(params=["bwrap", "none"])
def mode(request):
    if request.param == "bwrap":
        from orchestrate.workers import sandbox
        if (why := sandbox.probe()) is not None:
            pytest.skip(f"no sandbox here: {why}")
    return request.param


_WATCHED: list = []  # (repo, topic, the user's .git state before the run) of the running test


def campaign_repo(tmp_path, dag_text: str, worker: str, topic: str = "hostile", files: dict | None = None):
    """engine_helpers.campaign_repo, checked by `settled` after the test."""
    repo = engine_helpers.campaign_repo(tmp_path, dag_text, worker, files)
    _WATCHED.append((repo, topic, git_dir_state(repo)))
    return repo


def campaign_processes(topic: str, repo) -> list[int]:
    """Processes that carry this campaign's ORCH_TOPIC and a path of this repository in their environment."""
    import os
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if f"\0ORCH_TOPIC={topic}\0".encode() in b"\0" + env + b"\0" and str(repo).encode() in env:
            found.append(int(pid))
    return found


def dag(mode: str, evaluators: str = "", template: str = DAG) -> str:
    return template.replace("EVALUATORS", evaluators).replace("MODE", mode)


def run(tmp_path, orch, worker: str, mode: str, evaluators: str = "", *, checkout_kept: bool = True):
    repo = campaign_repo(tmp_path, dag(mode, evaluators), "#!/bin/sh\n" + worker)
    before = checkout_state(repo)
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    if checkout_kept:
        assert checkout_state(repo) == before
    return repo, baseline, result


def git_dir_state(repo) -> dict:
    common = repo / ".git"
    watched = [common / "config", *sorted((common / "hooks").rglob("*")), *sorted((common / "info").rglob("*"))]
    return {str(p.relative_to(common)): p.read_bytes() for p in watched if p.is_file()}


@pytest.fixture(autouse=True)
def settled(orch):
    """The check after every campaign of this module: the user's .git config, hooks and info/ are as
    they were; status, doctor and resume answer without a traceback and never exit 70; and no process
    of the campaign is alive."""
    _WATCHED.clear()
    yield
    watched, _WATCHED[:] = list(_WATCHED), []
    for repo, topic, before in watched:
        assert git_dir_state(repo) == before, "the user's .git config, hooks or info/ changed"
        for args in (("status", "--topic", topic), ("doctor", "--topic", topic), ("resume", "--topic", topic)):
            done = orch(*args, cwd=repo)
            assert "Traceback" not in done.out + done.err and done.rc != 70, (args, done.rc, done.out, done.err)
        assert git_dir_state(repo) == before, "resume changed the user's .git config, hooks or info/"
        assert campaign_processes(topic, repo) == []


def campaign_tree(repo) -> str:
    return repo.git("ls-tree", "-r", "--name-only", "campaign/hostile")


@pytest.mark.parametrize("asked", ["../../etc/passwd", "/abs", ".ledger/x", ".git/hooks/post-merge",
                                   "sub/.git/config", ".scratch/worktrees/x"])
def test_a_surface_request_outside_the_project_fails_the_node_and_never_wedges(tmp_path, orch, asked, mode):
    worker = f"""echo a > a.txt\nprintf '{{"freeze": "surface-exceed", "paths": ["{asked}"]}}' > "$ORCH_RETURN"\n"""
    repo, _, result = run(tmp_path, orch, worker, mode)
    assert result.rc == 75, result.err
    assert "surface-exceed asks for paths no node may have" in result.out + result.err
    assert asked in result.out + result.err
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    assert orch("resume", cwd=repo).rc == 75  # paused at the realignment seam again, not stuck in SURFACE_EXCEED
    assert orch("doctor", "--topic", "hostile", cwd=repo).rc == 0


def test_a_branch_reset_before_its_base_is_a_failed_attempt_not_a_repair(tmp_path, orch, mode):
    repo, baseline, result = run(tmp_path, orch, "git reset -q --hard HEAD~1\n", mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "A: its head" in text and "does not contain its base" in text
    assert "repair:" not in text
    assert repo.git("rev-parse", "campaign/hostile") == baseline
    assert not [e for e in journal(repo, "hostile") if e["kind"] == "merge"]


def test_an_index_lock_left_behind_is_the_nodes_failed_attempt(tmp_path, orch, mode):
    worker = 'echo a > a.txt\ntouch "$(git rev-parse --git-dir)/index.lock"\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "node A: the worker left git's index.lock behind" in text
    assert repo.git("rev-parse", "campaign/hostile") == baseline
    assert orch("status", cwd=repo).rc == 0


def test_leftovers_git_cannot_commit_are_the_nodes_failed_attempt_not_a_runner_error(tmp_path, orch, mode):
    # a nested repository with no commit (made outside the sandbox's object-store settings, as a tool would)
    worker = ("echo a > a.txt\nmkdir -p a-dir && "
              "env -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES -u GIT_DIR git -C a-dir init -q\n")
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "node A: git could not commit what the worker left uncommitted" in text
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_branch_moved_after_judging_is_reported_and_nothing_of_it_merges(tmp_path, orch, mode):
    # The evaluator stands in for a child the worker left behind: it commits on the node branch after the
    # head was read and judged, before MERGE.
    late = ('{name: late, run: "echo late > late.txt && git add late.txt && c=$(git commit-tree $(git write-tree) '
            '-p HEAD -m late) && git update-ref refs/heads/node/hostile/A $c && git reset -q"}')
    repo, baseline, result = run(tmp_path, orch, "echo a > a.txt\n", mode, evaluators=late)
    text = result.out + result.err
    assert result.rc == 75, text
    if mode == "none":  # in the sandbox the evaluator runs there too, and the branch cannot be moved at all
        assert "the branch moved after its head was judged" in text and "node/hostile/A" in text
    assert "late.txt" not in campaign_tree(repo)
    verdicts = [e for e in journal(repo, "hostile") if e["kind"] == "merge"]
    assert verdicts == []


def test_a_well_behaved_worker_still_merges(tmp_path, orch, mode):
    repo, _, result = run(tmp_path, orch, "echo a > a.txt\n", mode)
    assert result.rc == 75, result.err  # final acceptance
    assert "a.txt" in campaign_tree(repo)
    assert json.loads(orch("status", "--json", cwd=repo).out)["nodes"][0]["status"] == "ACCEPTED"


def attempt_log(repo) -> str:
    return (repo / ".scratch" / "runs" / "hostile" / "A" / "attempt-1.log").read_text()


HOOK = 'h="$(git rev-parse --git-common-dir)/hooks/NAME"; printf "#!/bin/sh\\ntouch MARK\\n" > "$h"; chmod +x "$h"'
# Each plants something that would run inside orchestrate's own git calls and touch MARK.
MISDEEDS = [
    'git config core.fsmonitor "$PWD/evil.sh"',
    'printf "#!/bin/sh\\ntouch MARK\\n" > "$(git rev-parse --git-common-dir)/hooks/post-merge"',
    HOOK.replace("NAME", "prepare-commit-msg"),
    HOOK.replace("NAME", "post-commit"),
    HOOK.replace("NAME", "reference-transaction"),
    'mkdir -p EVIL && printf "#!/bin/sh\\ntouch MARK\\n" > EVIL/post-commit && chmod +x EVIL/post-commit\n'
    'cp EVIL/post-commit EVIL/reference-transaction\ngit config core.hooksPath EVIL',
    'git config filter.x.clean "touch MARK; cat"\n'
    'echo "* filter=x" >> "$(git rev-parse --git-common-dir)/info/attributes"',
    'echo "* filter=x" >> "$(git rev-parse --git-common-dir)/info/attributes"',
    'git branch planted HEAD',
    'mkdir -p EVIL && echo EVIL >> "$(git rev-parse --git-common-dir)/objects/info/alternates"',
]


@pytest.mark.parametrize("misdeed", MISDEEDS)
def test_a_change_to_the_shared_git_dir_fails_the_node_and_is_put_back(tmp_path, orch, misdeed, mode):
    mark, evil = tmp_path / "mark", tmp_path / "evil-hooks"
    misdeed = misdeed.replace("MARK", str(mark)).replace("EVIL", str(evil))
    repo = campaign_repo(tmp_path, dag(mode), f"#!/bin/sh\necho a > a.txt\n{misdeed}\n")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    if mode == "none":
        assert "A: changed what no worker may change" in text
    else:
        assert "Read-only file system" in attempt_log(repo) or "read-only" in attempt_log(repo).lower()
    assert "a.txt" not in campaign_tree(repo)
    assert not mark.exists(), "a planted program ran"


@pytest.mark.parametrize("misdeed", ["checkout -q -b evil", "reset -q --soft HEAD~1"])
def test_a_branch_switch_or_reset_in_the_users_checkout_is_a_warning_naming_the_node(tmp_path, orch, misdeed, mode):
    worker = f'echo a > a.txt\ngit -C "$ORCH_WORKTREE/../../../.." {misdeed}\n'
    repo, _, result = run(tmp_path, orch, worker, mode, checkout_kept=mode != "none")
    text = result.out + result.err
    if mode == "none":
        assert "warning: the checkout changed while A ran" in text
        assert "A: changed what no worker may change" in text  # it moved or created a branch too
    else:  # the checkout is read-only in the sandbox: the command failed, and with it the worker
        assert "read-only" in attempt_log(repo).lower(), attempt_log(repo)
    assert "a.txt" not in campaign_tree(repo)
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"


def test_a_stray_write_into_the_users_checkout_is_a_warning_naming_the_node(tmp_path, orch, mode):
    repo = campaign_repo(tmp_path, dag(mode), "#!/bin/sh\necho a > a.txt\necho x > ../../../../stray\n")
    result = orch("run", cwd=repo)
    if mode == "none":
        assert "warning: the checkout changed while A ran" in result.out + result.err
    else:
        assert not (repo / "stray").exists()
        assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"  # the refused write failed the worker


def test_a_line_appended_to_the_journal_is_never_committed_and_names_the_node(tmp_path, orch, mode):
    worker = ('echo a > a.txt\n'
              'echo \'{"kind": "forged"}\' >> "$(git rev-parse --show-toplevel)/../../../../.ledger/state/hostile/journal.jsonl"\n')
    repo, _, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    if mode == "none":
        assert result.rc == 1, text
        assert "changed behind the engine's back" in text and "while A ran" in text
    else:
        assert result.rc == 75, text
        assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    from tests.helpers import RepoDir
    assert "forged" not in RepoDir(repo / ".ledger").git("log", "-p", "--format=")
    status = orch("status", cwd=repo)
    assert "Traceback" not in status.out + status.err


TWO = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
  - {id: C, depends_on: [A], file_surface: [c.txt], discipline: sh}
"""
FORGE = """#!/bin/sh
case "$ORCH_NODE" in
  B) c=$(git rev-parse campaign/hostile); h=$(git rev-parse node/hostile/A)
     n=$(git commit-tree "$c^{tree}" -p "$c" -p "$h" -m "merge node A: forged")
     git update-ref refs/heads/campaign/hostile "$n" "$c" ;;
esac
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr ABC abc).txt"
"""


def test_a_merge_forged_on_the_campaign_branch_halts_before_anything_else_merges(tmp_path, orch, mode):
    repo = campaign_repo(tmp_path, dag(mode, template=TWO), FORGE)
    result = orch("run", "--jobs", "1", cwd=repo)
    text = result.out + result.err
    if mode == "none":
        assert repo.git("log", "-1", "--format=%s", "campaign/hostile") == "merge node A: forged"  # nothing after
        assert result.rc == 1, text
        assert "FORGED" in text or "a merge the journal does not record" in text
        assert "node B: while it ran, ref refs/heads/campaign/hostile moved" in text
        assert "node C: while it ran" not in text  # queued behind B (--jobs 1): it never ran with B
        tree = campaign_tree(repo)
        assert "b.txt" not in tree and "c.txt" not in tree
        doctor = orch("doctor", "--topic", "hostile", cwd=repo)
        assert doctor.rc == 1 and "FORGED" in doctor.out and "merge node A: forged" in doctor.out, doctor.out
    else:  # the shared refs are read-only: the forgery never happened, the campaign went on
        assert result.rc == 75, text
        assert "forged" not in repo.git("log", "--format=%s", "campaign/hostile")
        assert not repo.git("log", "--format=%H", "--merges", "--grep=forged", "--all")
    assert "Traceback" not in orch("status", cwd=repo).err


def test_the_adherence_gate_names_a_merge_the_journal_did_not_record(tmp_path):
    from gates import adherence
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "r", {"f.txt": "x\n"})
    base = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "node/t/A")
    (repo / "a.txt").write_text("a\n")
    repo.git("add", "a.txt")
    repo.git("commit", "-qm", "a")
    head = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "campaign/t", base)
    repo.git("merge", "--no-ff", "-qm", "merge node A", head)
    made = repo.git("rev-parse", "HEAD")
    assert adherence.check(repo, "t", base, node_heads=[head], merge_commits=[made]).code == 0
    verdict = adherence.check(repo, "t", base, node_heads=[head], merge_commits=[])
    assert verdict.code == 1 and any(i.status == "FORGED" for i in verdict.items)


def test_a_surface_widened_in_the_campaigns_dag_is_never_honoured_without_the_seam(tmp_path, orch, mode):
    widen = ('dag="$(git rev-parse --show-toplevel)/../../../../.ledger/state/dag.yaml"\n'
             'grep -q x.txt "$dag" || sed -i "s/file_surface: \\[a.txt\\]/file_surface: [a.txt, x.txt]/" "$dag"\n'
             'echo a > a.txt\necho x > x.txt\n')
    repo = campaign_repo(tmp_path, dag(mode), "#!/bin/sh\n" + widen)
    assert "file_surface: [a.txt]" in (repo / ".ledger/state/dag.yaml").read_text()
    first = orch("run", cwd=repo)
    assert first.rc == 75, first.err
    if mode == "none":  # it widened the file: caught, put back, the edit kept aside
        assert "A: changed what no worker may change: .ledger/state/dag.yaml was changed" in first.out + first.err
        assert "x.txt" in (repo / ".scratch/rejected/hostile/dag.yaml").read_text()
    assert "x.txt" not in (repo / ".ledger/state/dag.yaml").read_text()
    assert orch("decide", "realignment", "rework", "--as", "p@example.com", cwd=repo).rc == 0
    again = orch("resume", cwd=repo)
    assert again.rc == 75, again.err
    assert "x.txt" not in campaign_tree(repo)
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    assert "x.txt" not in ledger_history(repo, "state/dag.yaml", "state/hostile/dag.yaml")


def ledger_history(repo, *paths: str) -> str:
    from tests.helpers import RepoDir
    return RepoDir(repo / ".ledger").git("log", "-p", "--format=", "--", *paths)


def test_children_started_with_setsid_do_not_outlive_the_attempt(tmp_path, orch, mode):
    # Unusual durations mark the children: inside the sandbox their pids are the PID namespace's own.
    # `env -i` wipes the ORCH_* tags: without the sandbox only the subreaper finds that one. A notifier's mark
    # worn by a worker's child (rv34: it was `ORCH_NOTIFIER=1`, and spared it) is not the runner's own.
    worker = ("echo a > a.txt\nsetsid sleep 4242 &\n(sleep 4243 &)\nenv -i setsid sleep 4244 &\n"
              "ORCH_NOTIFIER=1 setsid sh -c 'echo > marked; exec sleep 4247' &\n"
              "while [ ! -e marked ]; do :; done\n")  # in its own session before the worker's group is ended
    repo, _, result = run(tmp_path, orch, worker, mode)
    assert result.rc == 75, result.out + result.err
    for marked in ("4242", "4243", "4244", "4247"):
        assert running_with(("sleep", marked)) == [], marked


def test_another_checkout_s_worker_of_the_same_node_is_not_ended(tmp_path, orch):
    """The same plan run in two checkouts on one machine: same topic, node and attempt. The leftovers of one
    attempt are ended by its tags; the other checkout's worker carries the same topic, node and attempt."""
    import os
    import subprocess
    elsewhere = tmp_path / "other-checkout" / ".scratch" / "worktrees" / "hostile" / "A"
    env = dict(os.environ, ORCH_TOPIC="hostile", ORCH_NODE="A", ORCH_ATTEMPT="1", ORCH_WORKTREE=str(elsewhere))
    other = subprocess.Popen(["sleep", "4245"], env=env, start_new_session=True)
    try:  # the runner in a process of its own: this test's process is no child of it
        repo = campaign_repo(tmp_path, dag("none"), "#!/bin/sh\necho a > a.txt\n")
        result = engine_helpers.cli(repo, "run")
        assert result.returncode == 75, result.stdout + result.stderr
        assert other.poll() is None, "the other checkout's worker was ended"
    finally:
        other.kill()
        other.wait()


def test_folders_nested_thousands_deep_are_removed_without_wedging(tmp_path, orch, mode):
    """A worker (in the sandbox too: its worktree is its to write) nests folders 1500 deep in a folder git
    ignores: B re-bases A's worktree, whose removal of them must not recurse 1500 deep (Python's rmtree did)."""
    worker = ('case "$ORCH_NODE" in\n  A) echo a > a.txt\n'
              '     python3 -c "import os\nfor _ in range(1500):\n os.makedirs(\'build/a\'); os.chdir(\'build/a\')" ;;\n'
              '  B) ls build > b.txt 2>&1 || true ;;\nesac\n')
    text = dag(mode).replace("    evaluators: []\n", "") + \
        "  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}\n"
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\n" + worker, files={".gitignore": "build/\n"})
    result = orch("run", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "No such file or directory" in repo.git("show", "campaign/hostile:b.txt")  # B found no build/
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "hostile") if e["kind"] == "result"
            and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), "B did not re-base A's worktree: this test would prove nothing"


def test_an_admin_dir_whose_gitdir_a_worker_pointed_elsewhere_does_not_outlive_its_worktree(tmp_path, orch, mode):
    """rv24: the admin dir is the worker's to write (in the sandbox too). Pointed at a `.git` file it made in
    its run folder, with HEAD naming campaign/<topic>, git kept it after the worktree went: the campaign
    branch looked checked out there, and the next merge halted `run` and `resume` alike."""
    worker = ('if [ "$ORCH_NODE" = A ]; then\n  admin=$(sed "s/^gitdir: //" .git)\n  run=$(dirname "$ORCH_RETURN")\n'
              '  echo "gitdir: $admin" > "$run/.git"\n  echo "$run/.git" > "$admin/gitdir"\n'
              '  echo "ref: refs/heads/campaign/hostile" > "$admin/HEAD"\n  exit 0\nfi\necho b > b.txt\n')
    text = dag(mode).replace("    evaluators: []\n", "    on_exhausted: continue\n    max_rework: 1\n") + \
        "  - {id: B, file_surface: [b.txt], discipline: sh}\n"
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    assert "b.txt" in campaign_tree(repo), result.out + result.err


@pytest.mark.parametrize("claim", ["checkout", "decoy"])
def test_an_admin_dir_a_worker_pointed_elsewhere_does_not_halt_the_merges_of_others(tmp_path, orch, mode, claim):
    """A worker (in the sandbox too) points its admin dir's gitdir at your checkout, HEAD on campaign/<topic>: git
    then lists your checkout as holding the campaign branch, and every merge while it ran halted, naming your
    checkout. rv25: or at a `.git` file it made in $HOME (writable in the sandbox) naming that admin dir back.
    The admin dir of a worktree orchestrate made holds nothing, whatever it names. A waits for B's merge."""
    points = 'echo "$root/.git" > "$admin/gitdir"' if claim == "checkout" else \
        'mkdir -p "$HOME/decoy"; echo "gitdir: $admin" > "$HOME/decoy/.git"; echo "$HOME/decoy/.git" > "$admin/gitdir"'
    worker = ('if [ "$ORCH_NODE" = A ]; then\n  admin=$(sed "s/^gitdir: //" .git); root=$(cd ../../../.. && pwd)\n'
              f'  {points}\n'
              '  echo "ref: refs/heads/campaign/hostile" > "$admin/HEAD"\n'
              '  i=0; until git -C "$root" cat-file -e campaign/hostile:b.txt 2>/dev/null || [ $i -gt 300 ]; do\n'
              '    sleep 0.1; i=$((i+1)); done\n  exit 0\nfi\necho b > b.txt\n')
    text = dag(mode).replace("    evaluators: []\n", "").replace(f"sandbox: {mode}}}", f"sandbox: {mode}, unsandboxed: parallel}}") \
        + "  - {id: B, file_surface: [b.txt], discipline: sh}\n"
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\n" + worker)
    result = orch("run", "--jobs", "2", cwd=repo)
    assert "b.txt" in campaign_tree(repo) and "is checked out in" not in result.err, result.out + result.err


def test_the_mode_a_worker_gave_its_worktree_is_not_the_next_node_s(tmp_path, orch, mode):
    """rv24: A's `chmod 000` of its worktree's folder was re-based into B's (in the sandbox B could not even
    start there, and the attempt was B's to lose)."""
    worker = ('if [ "$ORCH_NODE" = A ]; then echo a > a.txt; git add a.txt; git commit -qm a; chmod 000 .; '
              'else echo "mode $(stat -c %a .)" > b.txt; fi\n')
    text = dag(mode) + "  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}\n"
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    assert repo.git("show", "campaign/hostile:b.txt") != "mode 0", result.out + result.err
    adds = {e["context"]["node"]: e["context"] for e in journal(repo, "hostile") if e["kind"] == "result"
            and e["context"].get("effect") == "worktree-add"}
    assert adds["B"].get("reused"), "B did not re-base A's worktree: this test would prove nothing"


def running_with(argv: tuple[str, ...]) -> list[int]:
    import os
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = tuple(a.decode(errors="replace") for a in fh.read().split(b"\0") if a)
        except OSError:
            continue
        if cmd == argv:
            found.append(int(pid))
    return found


# The policy skips the failed hostile node without a seam, so the innocent one is judged and merged in the
# same run; the innocent one's evaluator fails on a planted file. Layered: a sibling's worktree waits
# (queued, or landed until the layer's gates run) while the other works, which is the case to guard; the
# eager schedule makes an unsandboxed node's worktree only when it starts alone, and judges a landed node
# before the next one starts.
SIBLINGS = """\
topic: hostile
mode: autonomous
schedule: layered
defaults: {max_attempts: 1, sandbox: MODE}
policy: {realignment: {attempts-spent: {choice: skip}}}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh, A_IS}
  - {id: B, file_surface: [b.txt], discipline: sh, B_IS}
"""
INNOCENT = 'evaluators: [{name: own-work, run: "test ! -e planted.txt && ! grep -qs planted a.txt b.txt"}]'


def siblings(mode: str, hostile: str) -> str:
    innocent = "B" if hostile == "A" else "A"
    return dag(mode, template=SIBLINGS).replace(f", {hostile}_IS", "").replace(f"{innocent}_IS", INNOCENT)


def merged_alone(repo, orch, result, baseline, hostile: str, innocent: str, mode: str) -> str:
    """The innocent sibling is accepted and merged with its own change only, the hostile one is not, and
    without the sandbox the hostile one is blamed by name; returns the run's text."""
    text = result.out + result.err
    assert result.rc == 75, text  # final acceptance
    got = statuses(repo, orch, "hostile")
    assert got[innocent] == "ACCEPTED" and got[hostile] != "ACCEPTED", (got, text)
    own = f"{innocent.lower()}.txt"
    assert repo.git("diff", "--name-only", baseline, "campaign/hostile").split() == [own]
    assert repo.git("show", f"campaign/hostile:{own}") == innocent.lower()
    feedback = {e["context"]["node"]: e["context"].get("feedback", "") for e in journal(repo, "hostile")
                if e["kind"] == "node" and e["context"].get("feedback")}
    assert innocent not in feedback, feedback  # the innocent sibling is never blamed
    if mode == "none":
        assert f"{hostile}: wrote into another node's worktree: node {innocent}'s worktree " \
               f".scratch/worktrees/hostile/{innocent} changed:" in text
        assert f"node {hostile}: while it ran, " in feedback[hostile]
        assert f"node {innocent}'s worktree .scratch/worktrees/hostile/{innocent} changed" in feedback[hostile]
    return text


INTO_SIBLING = """#!/bin/sh
case "$ORCH_NODE" in
  A) echo a > a.txt; n=0
     while [ ! -d ../B ] && [ $n -lt BOUND ]; do sleep 0.01; n=$((n + 1)); done
     [ -d ../B ] && echo planted > ../B/planted.txt; exit 0 ;;
  B) echo b > b.txt ;;
esac
"""


def test_a_write_into_a_running_siblings_worktree_is_refused_and_without_the_sandbox_there_is_none(tmp_path, orch,
                                                                                                  mode):
    # With the sandbox both run at once and the write is refused. Without it A runs alone, and B's worktree
    # is made only once A's return is settled: while A runs there is no sibling worktree to write into.
    # without the sandbox B's worktree cannot appear while A runs: A gives up at once; with it, A waits for it
    # as long as it takes (rv54: a 1 s wait could end before it, and the test passed with nothing attempted)
    repo = campaign_repo(tmp_path, siblings(mode, hostile="A"), INTO_SIBLING.replace("BOUND", "1" if mode == "none"
                                                                                       else "6000"))
    text = both_merged(repo, orch, "2")
    events = journal(repo, "hostile")
    order = [(e["context"]["effect"], e["context"]["node"]) for e in events
             if e["kind"] == "result" and e["context"].get("effect") in ("worktree-add", "worker-start", "worker-spawn")]
    if mode == "none":
        assert "queued" not in text, text
        assert order.index(("worker-start", "A")) < order.index(("worktree-add", "B")), order
        judged = [i for i, e in enumerate(events) if e["kind"] == "verdict"]  # the barrier: after both ran
        assert judged and min(judged) > order_index(events, ("worker-start", "B")), order
    else:
        assert order.index(("worker-spawn", "B")) < order.index(("worker-start", "A")), order
        said = (repo / ".scratch" / "runs" / "hostile" / "A" / "attempt-1.log").read_text()
        assert "B/planted.txt: Read-only file system" in said, said  # the write was tried, and refused


def both_merged(repo, orch, jobs: str) -> str:
    """Run the campaign: both nodes accepted, each merged with its own file only; returns the run's text."""
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", "--jobs", jobs, cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert statuses(repo, orch, "hostile") == {"A": "ACCEPTED", "B": "ACCEPTED"}, text
    assert sorted(repo.git("diff", "--name-only", baseline, "campaign/hostile").split()) == ["a.txt", "b.txt"]
    return text


def order_index(events, want) -> int:
    return next(i for i, e in enumerate(events) if e["kind"] == "result"
                and (e["context"].get("effect"), e["context"].get("node")) == want)


@pytest.mark.parametrize("misdeed, said", [
    ("echo planted > ../A/planted.txt", "changed: planted.txt ("),
    ("echo planted > ../A/a.txt", "changed: a.txt ("),
    ("cd ../A && echo planted > planted.txt && git add planted.txt && git commit -qm planted", "HEAD moved from"),
    ("git -C ../A checkout -q -b evil", "HEAD is on evil, not node/hostile/A"),
    ("rm -rf ../A", "changed: it was removed"),
], ids=["untracked", "tracked", "commit", "branch", "removed"])
def test_a_write_into_a_landed_siblings_worktree_is_put_back_and_blamed_on_the_writer(tmp_path, orch, mode,
                                                                                      misdeed, said):
    # --jobs 1: A runs first and lands; its gates run only once B has returned too.
    worker = f'#!/bin/sh\ncase "$ORCH_NODE" in\n  A) echo a > a.txt ;;\n  B) echo b > b.txt; {misdeed} ;;\nesac\n'
    repo = campaign_repo(tmp_path, siblings(mode, hostile="B"), worker)
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", "--jobs", "1", cwd=repo)
    text = merged_alone(repo, orch, result, baseline, "B", "A", mode)
    if mode == "none":
        assert said in text, text
        assert f"(put back to {repo.git('rev-parse', 'node/hostile/A')[:12]})" in text  # the head it landed at


@pytest.mark.parametrize("misdeed", ["echo planted > ../A/planted.txt", "echo planted > ../A/a.txt"],
                         ids=["untracked", "tracked"])
def test_a_write_into_the_files_of_a_landed_sibling_that_nothing_reads_reaches_nothing(tmp_path, orch, mode,
                                                                                        misdeed):
    # A has no evaluators, so judging reads its commit, never its files (workers/siblings.py compares its
    # branch only): what B writes there is not merged, and A's worktree is cleaned before it is reused.
    worker = f'#!/bin/sh\ncase "$ORCH_NODE" in\n  A) echo a > a.txt ;;\n  B) echo b > b.txt; {misdeed}; exit 0 ;;\nesac\n'
    repo = campaign_repo(tmp_path, dag(mode, template=SIBLINGS).replace(", A_IS", "").replace(", B_IS", ""), worker)
    both_merged(repo, orch, "1")
    assert repo.git("show", "campaign/hostile:a.txt") == "a"


@pytest.mark.parametrize("misdeed, said", [
    ("git update-ref refs/heads/node/hostile/A HEAD", "branch node/hostile/A moved"),
    ('printf "gitdir: %s/.git\\n" "$(cd ../../../.. && pwd)" > ../A/.git', "its .git link or admin dir was replaced"),
    ('echo "ref: refs/heads/campaign/hostile" > "$(git rev-parse --git-common-dir)/worktrees/A/HEAD"',
     "HEAD is not on node/hostile/A"),
], ids=["branch", "git-link", "admin-head"])
def test_a_landed_sibling_that_nothing_reads_still_has_its_branch_link_and_head_guarded(tmp_path, orch, misdeed,
                                                                                         said):
    # what git acts on when A is merged, removed or reused: a `.git` link to the user's repository would
    # have `git worktree remove` and `orchestrate clean` work there
    worker = f'#!/bin/sh\ncase "$ORCH_NODE" in\n  A) echo a > a.txt ;;\n  B) echo b > b.txt; {misdeed} ;;\nesac\n'
    repo = campaign_repo(tmp_path, dag("none", template=SIBLINGS).replace(", A_IS", "").replace(", B_IS", ""), worker)
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", "--jobs", "1", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert statuses(repo, orch, "hostile")["A"] == "ACCEPTED", text
    assert repo.git("diff", "--name-only", baseline, "campaign/hostile").split() == ["a.txt"]
    assert "B: wrote into another node's worktree: node A's worktree .scratch/worktrees/hostile/A changed: " \
           f"{said} (put back to " in text, text
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1  # nothing left linked


FLIPPED = """#!/bin/sh
case "$ORCH_NODE" in
  A) echo a > a.txt ;;
  B) echo planted > ../A/a.txt
     printf '{"freeze": "refuted-premise", "premise": "p", "evidence": "e"}' > "$ORCH_RETURN" ;;
esac
"""


def test_files_that_went_uncompared_are_compared_before_judging_comes_to_read_them(tmp_path, orch):
    # A's judging read none of its files when B wrote into them (so only A's branch was compared); at the seam
    # B's freeze opens, a person adds a project evaluator, which runs in A's worktree: A is compared first
    repo = campaign_repo(tmp_path, dag("none", template=SIBLINGS).replace(", A_IS", "").replace(", B_IS", ""),
                         FLIPPED)
    first = orch("run", "--jobs", "1", cwd=repo)
    assert first.rc == 75, first.out + first.err
    (repo / ".ledger" / "config.yaml").write_text(
        'coherence:\n  evaluators:\n    - {name: own, run: "! grep -qs planted a.txt"}\n')
    assert orch("decide", "realignment", "skip", "--topic", "hostile", "--note", "n", cwd=repo).rc == 0
    second = orch("resume", "--topic", "hostile", cwd=repo)
    text = second.out + second.err
    assert statuses(repo, orch, "hostile")["A"] == "ACCEPTED", text
    assert "REWORK" not in text, text  # the innocent node is judged on what it made, at its first attempt
    assert "warning: node A's worktree .scratch/worktrees/hostile/A changed: a.txt (put back to " in text, text
    assert repo.git("show", "campaign/hostile:a.txt") == "a"


def test_layered_keeps_its_barrier_after_a_seam_opened_mid_layer(tmp_path, orch):
    # workers without the sandbox start one by one; B's freeze opens a seam before C has started: once it
    # is answered, C runs before anything of the layer is judged
    text = dag("none", template=SIBLINGS).replace(", A_IS", "").replace(", B_IS", "") \
        + "  - {id: C, file_surface: [c.txt], discipline: sh}\n"
    worker = FLIPPED.replace("echo planted > ../A/a.txt", ":").replace("esac", "  C) echo c > c.txt ;;\nesac")
    repo = campaign_repo(tmp_path, text, worker)
    assert orch("run", "--jobs", "1", cwd=repo).rc == 75
    assert orch("decide", "realignment", "skip", "--topic", "hostile", "--note", "n", cwd=repo).rc == 0
    done = orch("resume", "--topic", "hostile", cwd=repo)
    assert done.rc == 75, done.out + done.err
    assert statuses(repo, orch, "hostile") == {"A": "ACCEPTED", "B": "SKIPPED", "C": "ACCEPTED"}
    events = journal(repo, "hostile")
    verdicts = [i for i, e in enumerate(events) if e["kind"] == "verdict"]
    assert min(verdicts) > order_index(events, ("worker-start", "C")), done.out


def test_a_worker_that_points_its_own_git_link_at_the_users_repository_gets_nothing_committed_there(tmp_path, orch,
                                                                                                     mode):
    # the .git file of its worktree is the worker's to write, in the sandbox too; every git call orchestrate
    # makes in a returned worktree would then act on the user's repository (a leftover commit on their branch)
    worker = ('#!/bin/sh\ncase "$ORCH_NODE" in\n  A) echo a > a.txt ;;\n'
              '  B) printf "gitdir: %s/.git\\n" "$(cd ../../../.. && pwd)" > .git; echo planted > b.txt ;;\nesac\n')
    repo = campaign_repo(tmp_path, dag(mode, template=SIBLINGS).replace(", A_IS", "").replace(", B_IS", ""), worker)
    before, head = checkout_state(repo), repo.git("rev-parse", "HEAD")
    result = orch("run", "--jobs", "1", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert repo.git("rev-parse", "HEAD") == head and checkout_state(repo) == before, text
    assert statuses(repo, orch, "hostile") == {"A": "ACCEPTED", "B": "SKIPPED"}, text
    assert "node B: the worker rewrote its worktree's .git link" in text, text
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1


def test_an_integration_worktree_whose_git_link_a_worker_rewrote_is_made_anew_not_worked_in(tmp_path, orch):
    # B's premise makes the integration worktree (a checkout of the head); B points its .git at the user's
    # repository; C's premise needs it again: git there would detach and move the user's checkout
    text = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: none}
workers: {sh: "./work.sh"}
nodes:
  - {id: B, file_surface: [b.txt], discipline: sh, tripwires: [{run: "true"}]}
  - {id: C, file_surface: [c.txt], discipline: sh, depends_on: [B], tripwires: [{run: "true"}]}
"""
    worker = ('#!/bin/sh\ncase "$ORCH_NODE" in\n  B) echo b > b.txt\n'
              '     printf "gitdir: %s/.git\\n" "$(cd ../../../.. && pwd)" > ../../../integration/hostile/.git ;;\n'
              '  C) echo c > c.txt ;;\nesac\n')
    repo = campaign_repo(tmp_path, text, worker)
    before = checkout_state(repo)
    result = orch("run", "--jobs", "1", cwd=repo)
    out = result.out + result.err
    assert result.rc == 75, out
    assert checkout_state(repo) == before, out
    assert "the integration worktree" in out and "had its .git link rewritten" in out, out
    assert statuses(repo, orch, "hostile")["C"] == "ACCEPTED", out


@pytest.mark.parametrize("planted", ["ORCH_USAGE", "ORCH_OUTPUTS", "ORCH_RETURN"])
def test_a_fifo_where_the_runner_reads_a_workers_report_hangs_nothing(tmp_path, orch, mode, planted):
    """Opening a FIFO to read waits for a writer, forever: the usage, outputs and freeze files a worker
    leaves in its run folder (writable in the sandbox too) are read only if they are plain files."""
    template = DAG.replace("    discipline: sh\n", "    discipline: sh\n    outputs: [k]\n")
    worker = f'echo a > a.txt\n[ "{planted}" = ORCH_OUTPUTS ] || echo \'{{"k": 1}}\' > "$ORCH_OUTPUTS"\nmkfifo "${planted}"\n'
    repo = campaign_repo(tmp_path, dag(mode, template=template), "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75 and "not a file (p" in text, text
    accepted = statuses(repo, orch, "hostile")["A"] == "ACCEPTED"
    assert accepted == (planted == "ORCH_USAGE"), text  # usage is bookkeeping; outputs and freeze are evidence


LEDGER_GIT = '"$(git rev-parse --git-common-dir)/../.ledger/.git"'


@pytest.mark.parametrize("misdeed,what", [
    (f'printf "#!/bin/sh\\ntouch MARK\\n" > {LEDGER_GIT}/hooks/post-checkout; chmod +x {LEDGER_GIT}/hooks/post-checkout',
     ".ledger/.git/hooks/post-checkout was created"),
    (f'git --git-dir={LEDGER_GIT} config core.fsmonitor "touch MARK; false"', ".ledger/.git/config was changed"),
])
def test_a_program_planted_in_the_recorders_git_dir_is_put_back_before_a_person_runs_git_there(
        tmp_path, orch, mode, misdeed, what):
    """orchestrate's own git calls in the recorder are inert; a person's (the restore a ForeignWrite hint
    names) are not: what a worker plants in `.ledger/.git` fails its node and is put back."""
    mark = tmp_path / "mark"
    repo = campaign_repo(tmp_path, dag(mode), f"#!/bin/sh\necho a > a.txt\n{misdeed.replace('MARK', str(mark))}\n")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    if mode == "none":
        assert "A: changed what no worker may change" in text and what in text, text
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    from tests.helpers import RepoDir
    RepoDir(repo / ".ledger").git("checkout", "HEAD", "--", "config.yaml")  # as a person following a hint
    RepoDir(repo / ".ledger").git("status")
    assert not mark.exists(), "a program planted in the recorder's git dir ran"


def test_links_a_worker_plants_in_its_run_folder_are_never_written_through(tmp_path, orch, mode):
    """The run folder is the worker's to write (in the sandbox too); the runner, outside the sandbox, writes
    its evaluator log and its next attempt's log there. A link at either name is replaced, not followed."""
    outside = tmp_path / "tool"
    outside.write_text("the user's own file\n")
    worker = (f'run=$(dirname "$ORCH_RETURN")\nln -sf "{outside}" "$run/evaluators-$ORCH_ATTEMPT.log"\n'
              f'ln -sf "{outside}" "$run/attempt-$((ORCH_ATTEMPT+1)).log"\necho a > a.txt\n')
    text = dag(mode, "{name: show, run: 'cat a.txt; exit 1'}").replace("max_attempts: 1", "max_attempts: 2")
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    assert result.rc in (1, 75), result.out + result.err
    assert outside.read_text() == "the user's own file\n"
    assert "node A attempt 2" in (repo / ".scratch/runs/hostile/A/attempt-2.log").read_text()


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_change_hidden_from_git_by_an_index_flag_fails_the_attempt(tmp_path, orch, mode, flag):
    """The evaluator reads the worktree, the merge takes the commit: a flag that makes git pass over the
    file would let the evaluator pass on content that is never merged."""
    worker = f'echo bad > a.txt\ngit add a.txt\ngit commit -qm bad\necho good > a.txt\ngit update-index {flag} a.txt\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode, "{name: good, run: 'grep -qx good a.txt'}")
    text = result.out + result.err
    assert "the worktree holds a.txt other than its head commit does, though the worker" in text, text
    assert "a.txt" not in campaign_tree(repo)


# No flag at all. `forge_index.py`: the worker writes the index entry's stat data to match the file it changed
# after its commit (its admin dir is its to write, in the sandbox too). `forge_untracked.py`: its index carries a
# cache of untracked files listing the top folder as it was before b.txt was made, with the folder's stat data as
# it is now. Either way git's status in that index is clean, the evaluator reads the file, and the merge would not
# hold what it read. orchestrate looks with its own copy of the index, where a file written since is read.
@pytest.mark.parametrize("forge,then,hidden", [
    ("forge_index.py", "echo BBBB > a.txt\nsleep 1.1\n$FORGE\n", "a.txt"),
    ("forge_untracked.py", "$FORGE b.txt\n", "b.txt"),
])
def test_a_change_hidden_by_what_is_written_into_the_index_fails_the_attempt(tmp_path, orch, mode, monkeypatch,
                                                                             forge, then, hidden):
    import sys
    from pathlib import Path
    monkeypatch.setenv("FORGE", f"{sys.executable} {Path(__file__).with_name(forge)}")
    worker = ('echo AAAA > a.txt\ngit add a.txt\ngit commit -qm a\n' + then +
              '[ -z "$(git status --porcelain -uall)" ] && echo forged > "$(dirname "$ORCH_RETURN")/forged"\n')
    evaluator = f"{{name: b, run: 'grep -qx -e BBBB -e hidden {hidden}'}}"  # passes on what was hidden
    repo, baseline, result = run(tmp_path, orch, worker, mode, evaluator)
    text = result.out + result.err
    assert (repo / ".scratch/runs/hostile/A/forged").exists(), "the forgery did not hide the change: no proof"
    assert f"the worktree holds {hidden} other than its head commit does, though the worker" in text, text
    assert "a.txt" not in campaign_tree(repo)


# A folder git cannot open hides what it holds from `git status` and `git add -A` alike, and git says so only
# in a warning (exit 0). As root nothing is unreadable, but a path longer than the system takes (PATH_MAX)
# cannot be opened by name either, while a program that walks down one folder at a time reaches the file at its
# end (`deep_file.py`): the evaluator here passes on it.
DEEP = '$DEEP write\n'
READS_DEEP = "{name: deep, run: '$DEEP read | grep -qx hidden'}"


@pytest.mark.parametrize("committed", [True, False])
def test_a_file_in_a_folder_git_cannot_open_fails_the_attempt(tmp_path, orch, mode, monkeypatch, committed):
    _deep(monkeypatch)
    worker = "echo a > a.txt\n" + ("git add a.txt\ngit commit -qm a\n" if committed else "") + DEEP
    repo, baseline, result = run(tmp_path, orch, worker, mode, READS_DEEP)
    text = result.out + result.err
    assert "could not open directory 'ddd" in text, text
    assert "a.txt" not in campaign_tree(repo)


def test_without_orchestrate_s_index_copy_a_folder_git_cannot_open_still_fails_the_attempt(tmp_path, orch,
                                                                                           monkeypatch):
    """A worktree an earlier runner made has no index copy of this runner's: the worker's own index is read."""
    from orchestrate.workers import pool
    monkeypatch.setattr(pool, "record", lambda path, worktrees, base="": None)
    _deep(monkeypatch)
    worker = "echo a > a.txt\ngit add a.txt\ngit commit -qm a\n" + DEEP
    repo, baseline, result = run(tmp_path, orch, worker, "none", READS_DEEP)
    text = result.out + result.err
    assert "A: git could not read its worktree (warning: could not open directory 'ddd" in text, text
    assert "a.txt" not in campaign_tree(repo)


def test_a_tracked_file_git_cannot_stat_under_a_name_that_reads_as_a_warning_fails_the_attempt(tmp_path, orch,
                                                                                               mode, monkeypatch):
    """git reports a tracked file it cannot stat as `<path>: <error>`: a path that begins as git's own warning
    about an ignore file would read as that warning, which is let pass (rv23)."""
    _deep(monkeypatch)
    text = dag(mode, "{name: deep, run: '$DEEP read-forged | grep -qx B'}").replace(
        "file_surface: [a.txt]", "file_surface: [a.txt, \"warning: unable to access 'x/\"]")
    repo = campaign_repo(tmp_path, text, "#!/bin/sh\necho a > a.txt\ngit add a.txt\n$DEEP forge\n")
    result = orch("run", cwd=repo)
    assert "a tracked path reads as one of git's warnings: \"warning: unable to access 'x/ddd" in \
        result.out + result.err, result.out + result.err
    assert "a.txt" not in campaign_tree(repo)


# Warnings a repository, or a user's config, gives on every look hide nothing: they fail no node (rv23). The
# worker leaves its change uncommitted: both looks run, in orchestrate's index and in the worker's.
@pytest.mark.parametrize("files,config,warned", [
    ({".gitattributes": "*.png binary  # images\n!*.txt text\n"}, "", "is not a valid attribute name"),
    ({}, "[core]\n\tfsyncObjectFiles = true\n", "core.fsyncObjectFiles is deprecated"),
])
def test_warnings_git_gives_on_every_look_fail_no_node(tmp_path, orch, mode, files, config, warned):
    import os
    import subprocess
    with open(os.path.join(os.environ["HOME"], ".gitconfig"), "a") as fh:
        fh.write(config)
    repo = campaign_repo(tmp_path, dag(mode, "{name: ok, run: 'grep -qx changed a.txt'}"),
                         "#!/bin/sh\necho changed > a.txt\n", files={"a.txt": "a\n", **files})
    # check-attr reads the attributes every time; `status` only when a file's stat data is racy (a flaky proof)
    said = subprocess.run(["git", "-C", str(repo), "check-attr", "-a", "--", "a.txt"], capture_output=True,
                          text=True).stderr
    assert warned in said, "git gives no such warning here: this test would prove nothing"
    result = orch("run", cwd=repo)
    assert repo.git("show", "campaign/hostile:a.txt") == "changed", result.out + result.err


def _deep(monkeypatch) -> None:
    import sys
    from pathlib import Path
    monkeypatch.setenv("DEEP", f"{sys.executable} {Path(__file__).with_name('deep_file.py')}")


@pytest.mark.parametrize("planted", ["COMMIT_EDITMSG", "logs/HEAD"])
def test_links_in_the_worktrees_admin_dir_are_never_written_through_by_the_leftover_commit(tmp_path, orch, mode,
                                                                                           planted):
    """The admin dir is the worker's to write (in the sandbox too): git's own commit of what it left would
    write the commit message, or append the reflog, through a link it planted there."""
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's own file\n")
    worker = (f'admin="$(git rev-parse --git-dir)"\nmkdir -p "$admin/logs"\nrm -f "$admin/{planted}"\n'
              f'ln -s "{precious}" "$admin/{planted}"\necho a > a.txt\n')  # a.txt left uncommitted
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    assert precious.read_text() == "the user's own file\n", result.out + result.err
    assert "a.txt" in campaign_tree(repo)  # the attempt itself is fine: what was planted went first


def test_a_fifo_at_the_index_fails_the_attempt_instead_of_hanging_the_runner(tmp_path, orch, mode):
    worker = 'admin="$(git rev-parse --git-dir)"\necho a > a.txt\nrm -f "$admin/index"\nmkfifo "$admin/index"\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    assert "index in its worktree's git admin dir is not a file" in result.out + result.err, result.out
    assert "a.txt" not in campaign_tree(repo)


def test_a_filter_a_nested_repository_defines_never_runs_in_orchestrates_git(tmp_path, orch, mode):
    """A gitlink whose nested repository's own config defines a clean filter: git would start a git of its
    own in that repository (to see whether its worktree is dirty) from orchestrate's status and add, and
    that git reads the nested config, whose driver names orchestrate cannot know."""
    mark = tmp_path / "ran"
    worker = (f'mkdir sub\ncd sub\nunset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\ngit init -q\n'
              # the worker's own git runs it too (ORCH_NODE is in its environment): only others are marked
              f'printf \'#!/bin/sh\\n[ -n "$ORCH_NODE" ] || ps -o args= -p $PPID >> "{mark}"\\ncat\\n\' > .git/evil.sh\n'
              'chmod +x .git/evil.sh\ngit config filter.evil.clean "$PWD/.git/evil.sh"\necho "* filter=evil" > .gitattributes\n'
              'echo x > f\ngit add f .gitattributes\ngit -c user.name=w -c user.email=w@example.com commit -qm s\n'
              'touch -d 2001-01-01 f\nsha=$(git rev-parse HEAD)\ncd ..\n'
              'git update-index --add --cacheinfo "160000,$sha,sub"\ngit commit -qm "A: gitlink"\necho a > a.txt\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    assert not mark.exists(), "a filter of the nested repository ran in orchestrate's git: " + mark.read_text()


def test_what_an_evaluator_leaves_running_without_the_sandbox_ends_with_its_judging(tmp_path, orch):
    """The node's evaluator (a script its worker wrote) starts a `setsid` loop and exits 0; the loop would
    keep writing `good` into the integration worktree while the campaign checks judge the merge there."""
    check = '"grep -qx good a.txt"'
    worker = ('echo bad > a.txt\nprintf \'root="$(dirname "$(git rev-parse --git-common-dir)")"\\n'
              'setsid sh -c "while :; do echo good > $root/.scratch/integration/hostile/a.txt 2>/dev/null; '
              'sleep 0.01; done" > /dev/null 2>&1 &\\n\' > test.sh\n')
    text = dag("none", "{name: t, run: 'sh test.sh'}").replace("file_surface: [a.txt]", "file_surface: [a.txt, test.sh]")
    repo = campaign_repo(tmp_path, text.replace("nodes:", f"checks: [{{name: good, run: {check}}}]\nnodes:"),
                         "#!/bin/sh\n" + worker, files={"a.txt": "good\n"})  # the check passes on the base
    result = orch("run", cwd=repo)
    assert repo.git("show", "campaign/hostile:a.txt") == "good", result.out + result.err


def test_a_split_index_the_worker_makes_does_not_stop_the_run(tmp_path, orch, mode):
    """The admin dir is cleared before orchestrate's git runs there: a split index's shared part stays."""
    worker = 'echo a > a.txt\ngit update-index --split-index\ngit add a.txt\ngit commit -qm a\necho a2 > a.txt\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err


def test_a_clean_filter_the_project_configures_does_not_fail_honest_work(tmp_path, orch, mode):
    """nbstripout, git-lfs: the worker's git commits the cleaned file; the comparison with the commit, made with
    filters off, passes over files a configured filter converts (named by the committed attributes)."""
    # the pause: the file older than the index git writes, so git takes it for clean by its stat data alone
    worker = 'printf "code\\nOUT: noise\\n" > a.txt\nsleep 1.1\ngit add a.txt\ngit commit -qm a\n'
    repo = campaign_repo(tmp_path, dag(mode), "#!/bin/sh\n" + worker, files={".gitattributes": "a.txt filter=strip\n"})
    repo.git("config", "filter.strip.clean", "sed /^OUT/d")
    repo.git("config", "filter.strip.smudge", "cat")
    _WATCHED[-1] = (repo, "hostile", git_dir_state(repo))  # the project's own config, before the run
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert repo.git("show", "campaign/hostile:a.txt") == "code"


@pytest.mark.parametrize("filtered", ["filter=strip", "filter=lfs"])
def test_an_uncommitted_change_to_a_file_a_filter_converts_is_committed_as_a_leftover(tmp_path, orch, mode, home,
                                                                                       filtered):
    """The pass-over above is for the comparison after the leftover commit, never for the look that decides
    whether there are leftovers: the evaluator reads what the worker left, and the merge must hold it. The
    filter is defined in the project's config (strip) or in the user's (`git lfs install` writes `filter.lfs`
    in ~/.gitconfig)."""
    worker = 'echo AAAA > a.txt\ngit add a.txt\ngit commit -qm a\necho BBBB > a.txt\n'
    repo = campaign_repo(tmp_path, dag(mode, "{name: b, run: 'grep -qx BBBB a.txt'}"), "#!/bin/sh\n" + worker,
                         files={".gitattributes": f"a.txt {filtered}\n"})
    repo.git("config", "filter.strip.clean", "cat")
    with (home / ".gitconfig").open("a") as fh:
        fh.write('[filter "lfs"]\n\tclean = cat\n\tsmudge = cat\n\trequired = true\n')
    _WATCHED[-1] = (repo, "hostile", git_dir_state(repo))
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert repo.git("show", "campaign/hostile:a.txt") == "BBBB", result.out


@pytest.mark.parametrize("plant", ['mkfifo "$P"', 'mkdir "$P"', 'ln -s "$HOME/victim.txt" "$P"'])
def test_what_a_worker_plants_where_orchestrate_copies_its_index_is_replaced(tmp_path, orch, home, plant):
    """The pool's folder is in the repository, where a worker without the sandbox can write: a FIFO or a folder
    at the name of the index copy orchestrate judges with stopped the run (exit 70), a link had the copy
    written into the file it names."""
    (home / "victim.txt").write_text("the user's own file\n")
    worker = f'echo a > a.txt\nP="$(git rev-parse --show-toplevel)/../.pool/A.index.judged"\n{plant}\n'
    repo, baseline, result = run(tmp_path, orch, worker, "none")
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert (home / "victim.txt").read_text() == "the user's own file\n"
    assert "a.txt" in campaign_tree(repo)


def test_orchestrates_copy_of_the_index_changed_fails_the_attempt_rather_than_weakening_the_check(tmp_path, orch):
    """Without its copy, the comparison with the commit would fall back to the index flags alone, which stat data
    written into the worker's index gets past: a copy that is not what was recorded fails the attempt."""
    worker = 'echo a > a.txt\ngit add a.txt\ngit commit -qm a\necho junk > "$(git rev-parse --show-toplevel)/../.pool/A.index"\n'
    repo, baseline, result = run(tmp_path, orch, worker, "none")
    text = result.out + result.err
    assert "A: its worktree could not be compared with its head commit (orchestrate's copy of the index its " \
           "checkout wrote was changed or removed" in text, text
    assert "a.txt" not in campaign_tree(repo)


def test_an_admin_dir_swapped_for_a_link_to_a_users_folder_is_never_cleared(tmp_path, orch, home):
    """Without the sandbox a worker can replace its worktree's admin dir with a link to a folder of the user's
    holding copies of gitdir and commondir: orchestrate clears an admin dir before its own git runs there, and
    would have cleared that folder."""
    worker = ('admin="$(git rev-parse --absolute-git-dir)"\nmkdir "$HOME/mine"\ncp "$admin/gitdir" "$admin/HEAD" '
              '"$admin/index" "$HOME/mine/"\ngit rev-parse --path-format=absolute --git-common-dir > "$HOME/mine/commondir"\n'
              'echo precious > "$HOME/mine/precious.txt"\nrm -rf "$admin"\nln -s "$HOME/mine" "$admin"\necho a > a.txt\n')
    repo, baseline, result = run(tmp_path, orch, worker, "none")
    assert (home / "mine" / "precious.txt").read_text() == "precious\n", result.out + result.err
    assert "the worker rewrote its worktree's .git link" in result.out + result.err, result.out
    assert "a.txt" not in campaign_tree(repo)


def test_a_filter_named_by_an_ignored_gitattributes_does_not_hide_a_change(tmp_path, orch, mode):
    """The pass-over above needs the committed attributes: an ignored .gitattributes of the worker's naming a
    filter the project defines does not make a hidden change pass."""
    worker = ('echo AAAA > a.txt\ngit add a.txt\ngit commit -qm a\necho BBBB > a.txt\n'
              'echo "a.txt filter=strip" > .gitattributes\ngit update-index --assume-unchanged a.txt\n')
    repo = campaign_repo(tmp_path, dag(mode), "#!/bin/sh\n" + worker, files={".gitignore": ".gitattributes\n"})
    repo.git("config", "filter.strip.clean", "cat")
    _WATCHED[-1] = (repo, "hostile", git_dir_state(repo))
    result = orch("run", cwd=repo)
    assert "the worktree holds a.txt other than its head commit does" in result.out + result.err, result.out
    assert "a.txt" not in campaign_tree(repo)


def test_gitmodules_ignore_none_does_not_bring_back_the_git_in_the_nested_repository(tmp_path, orch, mode):
    """`.gitmodules` is the worker's to write, and its `ignore = none` outranks the config key: the status
    orchestrate runs says so on its command line."""
    mark = tmp_path / "ran"
    worker = (f'mkdir sub\ncd sub\nunset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\ngit init -q\n'
              f'printf \'#!/bin/sh\\n[ -n "$ORCH_NODE" ] || echo ran >> "{mark}"\\ncat\\n\' > .git/evil.sh\n'
              'chmod +x .git/evil.sh\ngit config filter.evil.clean "$PWD/.git/evil.sh"\necho "* filter=evil" > .gitattributes\n'
              'echo x > f\ngit add f .gitattributes\ngit -c user.name=w -c user.email=w@example.com commit -qm s\n'
              'touch -d 2001-01-01 f\nsha=$(git rev-parse HEAD)\ncd ..\n'
              'printf \'[submodule "sub"]\\n\\tpath = sub\\n\\turl = ./sub\\n\\tignore = none\\n\' > .gitmodules\n'
              'git add .gitmodules\ngit update-index --add --cacheinfo "160000,$sha,sub"\ngit commit -qm "A: gitlink"\n'
              'echo a > a.txt\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    assert not mark.exists(), "a filter of the nested repository ran in orchestrate's git"


def test_a_submodule_moved_and_not_committed_fails_the_attempt_saying_so(tmp_path, orch):
    worker = ('mkdir sub\ncd sub\ngit init -q\necho x > f\ngit add f\ngit -c user.name=w -c user.email=w@example.com '
              'commit -qm one\ncd ..\ngit add sub 2>/dev/null\ngit commit -qm "A: gitlink"\n'
              'cd sub\necho y > f\ngit -c user.name=w -c user.email=w@example.com commit -qam two\n')
    repo, baseline, result = run(tmp_path, orch, worker, "none")
    assert "a submodule was moved and the move not committed (sub)" in result.out + result.err, result.out


def test_a_leftover_that_keeps_starting_children_is_gone_before_the_node_is_judged(tmp_path, orch, mode):
    """A worker leaves a loop (a session of its own) that starts children as fast as it can: what it started
    while the leftovers were being ended must not live on into judging, where it could write the worktree."""
    worker = "echo a > a.txt\nsetsid sh -c 'while :; do sleep 4246 & done' >/dev/null 2>&1 &\nsleep 0.3\n"
    evaluator = "{name: alone, run: \"sh -c '! pgrep -f \\\"sleep 424[6]\\\"'\"}"
    repo, _, result = run(tmp_path, orch, worker, mode, evaluator)
    assert result.rc == 75, result.out + result.err
    assert statuses(repo, orch, "hostile")["A"] == "ACCEPTED", result.out
    assert running_with(("sleep", "4246")) == []


@pytest.mark.parametrize("which", ["node/hostile/A", "campaign/hostile"])
def test_a_branch_made_a_symbolic_ref_to_the_users_branch_never_moves_it(tmp_path, orch, which):
    """rv36: without the sandbox a worker can make its own branch's ref file (or the campaign branch's, while it
    is at your branch's commit) `ref: refs/heads/main`; orchestrate's commit of its leftovers, or its move of
    the campaign branch, followed it and moved your checked-out branch."""
    worker = ("#!/bin/sh\ncommon=$(git rev-parse --path-format=absolute --git-common-dir)\necho a > a.txt\n"
              f"printf 'ref: refs/heads/main\\n' > \"$common/refs/heads/{which}\"\n"
              + ("" if which.startswith("node/") else "git add a.txt && git commit -qm a\n"))
    repo = campaign_repo(tmp_path, dag("none"), worker)
    main = repo.git("rev-parse", "main")
    result = orch("run", cwd=repo)
    assert repo.git("rev-parse", "main") == main, result.out + result.err
    assert repo.git("status", "--porcelain") == ""
    if which.startswith("node/"):
        assert "its ref names refs/heads/main" in result.out + result.err, result.out + result.err


def test_a_submodules_git_dir_or_a_commondir_planted_in_the_shared_git_dir_is_put_back(tmp_path, orch, home):
    """rv37: without the sandbox a worker could give your submodule's git dir (`.git/modules/<name>/config`) an
    fsmonitor your next `git status` runs, leave a git dir of its making for a submodule you check out later, or
    write `.git/commondir`, which sends every git in your checkout to a git dir of its own: none was watched."""
    worker = ("#!/bin/sh\ncommon=$(git rev-parse --path-format=absolute --git-common-dir)\necho a > a.txt\n"
              'printf "[core]\\n\\tfsmonitor = /tmp/evil\\n" >> "$common/modules/lib/sub/config"\n'
              'mkdir -p "$common/modules/later/objects" && echo "ref: refs/heads/x" > "$common/modules/later/HEAD"\n'
              'printf "[core]\\n\\tfsmonitor = /tmp/evil\\n" > "$common/modules/later/config"\n'
              'mkdir -p "$HOME/copy.git" && for f in objects refs HEAD packed-refs; do [ -e "$common/$f" ] && '
              'ln -s "$common/$f" "$HOME/copy.git/$f"; done\n'
              'printf "[core]\\n\\tfsmonitor = /tmp/evil\\n" > "$HOME/copy.git/config"\n'
              'echo "$HOME/copy.git" > "$common/commondir"\n')
    repo = campaign_repo(tmp_path, dag("none"), worker)
    module = _module_git_dir(repo, "lib/sub")
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    for said in (".git/modules/lib/sub/config was changed", ".git/modules/later/ was created",
                 ".git/commondir was created"):
        assert said in text, (said, text)
    assert (module / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (repo / ".git" / "modules" / "later").exists() and not (repo / ".git" / "commondir").exists()
    kept = list((repo / ".scratch" / "rejected" / "hostile").glob("module-later-*"))  # moved aside: it may be yours
    assert len(kept) == 1 and (kept[0] / "config").is_file()
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_node_branch_an_evaluator_made_symbolic_is_deleted_itself_not_the_users_branch(tmp_path, orch):
    """rv38: an attempt that does not count (its evaluator cannot start: exit 127) has its branch deleted; one an
    evaluator without the sandbox made `ref: refs/heads/main` had git delete main."""
    plant = ("common=$(git rev-parse --path-format=absolute --git-common-dir); "
             "printf 'ref: refs/heads/main\\n' > \"$common/refs/heads/node/hostile/A\"; exit 127")
    repo = campaign_repo(tmp_path, dag("none", "{name: t, run: " + json.dumps(plant) + "}"), "#!/bin/sh\necho a > a.txt\n")
    main = repo.git("rev-parse", "main")
    result = orch("run", cwd=repo)
    assert repo.git("rev-parse", "--verify", "-q", "refs/heads/main", check=False) == main, result.out + result.err


def test_a_module_git_dir_swapped_for_a_link_is_not_put_back_through_it(tmp_path, orch, home):
    """rv38: a submodule's git dir in `.git/modules/` that a worker swapped for a link to a folder of yours had its
    config and hooks written there when put back."""
    outside = home / "yours"
    worker = ("#!/bin/sh\ncommon=$(git rev-parse --path-format=absolute --git-common-dir)\necho a > a.txt\n"
              f'cp -r "$common/modules/sub" "{outside}" && echo "[core] fsmonitor = mine" > "{outside}/config"\n'
              f'mv "$common/modules/sub" "$HOME/moved" && ln -s "{outside}" "$common/modules/sub"\n')
    repo = campaign_repo(tmp_path, dag("none"), worker)
    module = repo / ".git" / "modules" / "sub"
    (module / "objects").mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/main\n")
    (module / "config").write_text("[core]\n\tbare = false\n")
    result = orch("run", cwd=repo)
    assert ".git/modules/sub/ was deleted" in result.out + result.err, result.out + result.err
    assert (outside / "config").read_text() == "[core] fsmonitor = mine\n"  # what is there was not written over


@pytest.mark.parametrize("where", ["nested", "another file system"])
def test_module_git_dirs_made_during_the_run_are_moved_aside_nested_or_across_file_systems(tmp_path, orch, home,
                                                                                          where):
    """rv39: a module git dir made inside another made since (`modules/x/modules/y`) went with its parent, and
    its own move then failed; with `.scratch/` on another file system the rename failed (EXDEV): both halted."""
    worker = ('#!/bin/sh\necho a > a.txt\ncommon=$(git rev-parse --git-common-dir)\n'
              'mkdir -p "$common/modules/x/modules/y" && echo "ref: refs/heads/m" > "$common/modules/x/HEAD"\n'
              'echo "ref: refs/heads/m" > "$common/modules/x/modules/y/HEAD"\n')
    repo = campaign_repo(tmp_path, dag("none"), worker)
    if where == "another file system":
        if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(repo).st_dev:
            pytest.skip("no /dev/shm on another file system here")
        import shutil
        other = tempfile.mkdtemp(dir="/dev/shm", prefix="orch-scratch-")
        if (repo / ".scratch").exists():
            shutil.copytree(repo / ".scratch", other, dirs_exist_ok=True, symlinks=True)
            shutil.rmtree(repo / ".scratch")
        (repo / ".scratch").symlink_to(other)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert ".git/modules/x/ was created" in text and "not put back" not in text, text
    assert not (repo / ".git" / "modules" / "x").exists()
    kept = list((repo / ".scratch" / "rejected" / "hostile").glob("module-x-*"))
    assert len(kept) == 1 and (kept[0] / "modules" / "y" / "HEAD").is_file()
    if where == "another file system":  # back on this one: /dev/shm is the machine's, and the checks after read it
        (repo / ".scratch").unlink()
        shutil.copytree(other, repo / ".scratch", symlinks=True)
        shutil.rmtree(other)


def test_a_head_planted_above_a_submodules_git_dir_of_yours_is_removed_and_yours_stays(tmp_path, orch, home):
    """rv40: a HEAD written in `.git/modules/lib/`, which holds your `lib/foo`, made `lib` look like a git dir
    made since: it was moved aside whole, your submodule's git dir with it."""
    worker = ('#!/bin/sh\necho a > a.txt\ncommon=$(git rev-parse --git-common-dir)\n'
              'echo "ref: refs/heads/x" > "$common/modules/lib/HEAD"\n')
    repo = campaign_repo(tmp_path, dag("none"), worker)
    mine = _module_git_dir(repo, "lib/foo")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert "not put back" not in text and "HEAD (removed" in text, text
    assert (mine / "config").read_text() == "[core]\n\tbare = false\n" and not (mine.parent / "HEAD").exists()


def _module_git_dir(repo, name: str):
    """A submodule's git dir of the user's in `.git/modules/`, as git leaves one (enough of it for the watch)."""
    module = repo / ".git" / "modules" / name
    (module / "objects").mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/main\n")
    (module / "config").write_text("[core]\n\tbare = false\n")
    return module


def test_a_module_git_dir_that_cannot_be_copied_across_file_systems_stays_whole_and_says_why(tmp_path):
    """rv40: copying a module git dir holding a FIFO to another file system failed half way; the message said
    `None` and the half copy stayed."""
    from orchestrate.workers import git_modules
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no /dev/shm on another file system here")
    module = tmp_path / "modules" / "x"
    module.mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/m\n")
    os.mkfifo(module / "pipe")
    keep = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="orch-keep-"))
    try:
        with pytest.raises(OSError, match="could not be copied whole"):
            git_modules._aside(module, keep, "x")
        assert (module / "HEAD").is_file() and list(keep.iterdir()) == []
    finally:
        import shutil
        shutil.rmtree(keep)
