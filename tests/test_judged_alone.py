"""A node is judged on its commit alone: what its worker left that git ignores is gone before its evaluators run
(unless `keep_ignored: true` trusts workers with ignored files)."""
from __future__ import annotations

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, journal

# The worker commits a wrong `add` and leaves, in the ignored __pycache__/, the right one compiled as an
# unchecked-hash pyc: Python loads that without looking at the source, so an evaluator run in the worktree as
# the worker left it passed, and the wrong source was merged.
WORKER = r"""#!/bin/sh
set -eu
printf 'def add(a, b):\n    return a + b\n' > calc.py
python3 -c 'import py_compile as p; p.compile("calc.py", cfile="__pycache__/calc.%s.pyc" % __import__("sys").implementation.cache_tag, invalidation_mode=p.PycInvalidationMode.UNCHECKED_HASH)'
printf 'def add(a, b):\n    return a - b\n' > calc.py
git add calc.py && git commit -qm "add, subtly"
"""
DAG = """\
topic: alone
workers: {{sh: "./work.sh"}}
defaults: {{sandbox: {mode}{keep}, max_attempts: 1}}
nodes:
  - id: A
    title: adds
    depends_on: []
    file_surface: [calc.py]
    discipline: sh
    evaluators: [{{name: adds, run: "python3 -c 'import calc; assert calc.add(2, 2) == 4, calc.add(2, 2)'"}}]
"""
BWRAP = sandbox.probe()


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
@pytest.mark.parametrize("staged", [False, True])
def test_bytecode_a_worker_left_ignored_is_not_what_its_evaluators_judge(tmp_path, orch, mode, staged):
    """`staged` (rv30): the worker also stages the bytecode (`git add -f`) and never commits it: in its own index
    the file was tracked, so the clear, which listed by that index, left it."""
    worker = WORKER + ("git add -f __pycache__\n" if staged else "")
    repo = campaign_repo(tmp_path, DAG.format(mode=mode, keep=""), worker, {".gitignore": "__pycache__/\n"})
    done = orch("run", "--no-interactive", cwd=repo)
    verdicts = [e["context"] for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]
    assert verdicts and not verdicts[0]["code"] == 0, done.out + done.err
    assert "return a - b" not in repo.git("show", "campaign/alone:calc.py", check=False)


def test_with_keep_ignored_the_evaluators_read_what_the_worker_left_as_documented(tmp_path, orch):
    """The opt-in trusts workers with ignored files (warm caches): the evaluators read them, as README says."""
    repo = campaign_repo(tmp_path, DAG.format(mode="none", keep=", keep_ignored: true"), WORKER,
                         {".gitignore": "__pycache__/\n"})
    orch("run", "--no-interactive", cwd=repo)
    verdicts = [e["context"] for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]
    assert verdicts and verdicts[0]["code"] == 0


def test_a_worktree_that_cannot_be_scrubbed_fails_the_attempt_and_nothing_is_judged(tmp_path, orch, monkeypatch):
    """A worker still running (without the sandbox) swaps a folder for a link after git listed what to remove:
    the removal refuses to go through it, and the attempt fails rather than be judged with the rest still there."""
    import errno

    from orchestrate.workers import untracked

    def swapped(path, commit, keep_ignored=False):
        raise OSError(errno.ELOOP, "Too many levels of symbolic links")
    monkeypatch.setattr(untracked, "clear", swapped)
    repo = campaign_repo(tmp_path, DAG.format(mode="none", keep=""), WORKER, {".gitignore": "__pycache__/\n"})
    done = orch("run", "--no-interactive", cwd=repo)
    assert "node A: its worktree could not be made to hold its commit alone (Too many levels of symbolic " \
           "links); its attempt failed" in done.out
    assert not [e for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]


IDENT_WORKER = r"""#!/bin/sh
set -eu
mkdir -p calc
printf '*.py ident\n' > calc/.gitattributes
printf 'def add(a, b):\n    return a - b\nV = "$Id: "; add = lambda a, b: a + b; W = "$"\n' > calc/calc.py
git add calc && git commit -qm "add, with the right one hidden where ident cleans it away"
"""
IDENT_DAG = DAG.replace("file_surface: [calc.py]", 'file_surface: ["calc/**"]').replace(
    "run: \"python3 -c", "run: \"cd calc && python3 -c")


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
def test_code_hidden_where_ident_cleans_it_away_is_not_what_the_evaluators_judge(tmp_path, orch, mode):
    """rv31: with `ident`, `$Id: <anything> $` cleans to `$Id$`, so the worktree compared equal to the commit in
    orchestrate's own index too, and the evaluators ran the hidden line. Such files are checked out again."""
    repo = campaign_repo(tmp_path, IDENT_DAG.format(mode=mode, keep=""), IDENT_WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    verdicts = [e["context"] for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]
    assert verdicts and verdicts[0]["code"] != 0, done.out + done.err


# rv32: the attributes came from a .gitattributes the worker left ignored (removed only after the look), or from a
# committed `* text=auto` (a CR the look takes away: `\` before it no longer continues a shell line)
HIDDEN_ATTRS_WORKER = r"""#!/bin/sh
set -eu
mkdir -p calc
printf 'calc/.gitattributes\n' > .gitignore
printf 'def add(a, b):\n    return a - b\nV = "$Id$"\n' > calc/calc.py
git add .gitignore calc && git commit -qm "add"
printf '*.py ident\n' > calc/.gitattributes
printf 'def add(a, b):\n    return a - b\nV = "$Id: "; add = lambda a, b: a + b; W = "$"\n' > calc/calc.py
"""
CRLF_WORKER = r"""#!/bin/sh
set -eu
printf 'echo \\\nexit 0;\nexit 1\n' > ok.sh
git add ok.sh && git commit -qm "ok, or not"
printf 'echo \\\r\nexit 0;\nexit 1\n' > ok.sh
"""


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
@pytest.mark.parametrize("case", ["ignored-attributes", "crlf", "autocrlf"])
def test_bytes_a_conversion_hides_are_written_anew_before_the_evaluators(tmp_path, orch, mode, case):
    if case in ("crlf", "autocrlf"):
        dag = DAG.format(mode=mode, keep="").replace("file_surface: [calc.py]", "file_surface: [ok.sh]").replace(
            "run: \"python3 -c 'import calc; assert calc.add(2, 2) == 4, calc.add(2, 2)'\"", 'run: "sh ok.sh"')
        repo = campaign_repo(tmp_path, dag, CRLF_WORKER, {".gitattributes": "* text=auto\n"} if case == "crlf" else {})
        if case == "autocrlf":
            repo.git("config", "core.autocrlf", "input")
    else:
        dag = IDENT_DAG.format(mode=mode, keep="").replace('file_surface: ["calc/**"]',
                                                           'file_surface: ["calc/**", .gitignore]')
        repo = campaign_repo(tmp_path, dag, HIDDEN_ATTRS_WORKER)
    done = orch("run", "--no-interactive", cwd=repo)
    verdicts = [e["context"] for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]
    assert verdicts and verdicts[0]["code"] != 0, done.out + done.err


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_is_read_as_git_writes_it_in_each_version(tmp_path, version):
    """index_file.entries against `git ls-files --debug`: every file's and link's ctime, mtime, inode and size, in
    index versions 2 to 4 (4 compresses each name against the one before; 3 may hold extended flags)."""
    import os
    import re

    from orchestrate.workers import index_file
    from tests.helpers import make_repo
    repo = make_repo(tmp_path / "r", {"a/b/c.txt": "c\n", "a/b/d.txt": "dd\n", "a/e.txt": "e\n", "z.txt": "z\n"})
    os.symlink("z.txt", repo / "link")
    (repo / "new.txt").write_text("n\n")
    repo.git("add", "link")
    repo.git("add", "-N", "new.txt")  # intent-to-add: an extended flag in version 3
    long = "/".join(["d" * 250] * 17) + "/f.txt"  # longer than an entry's flags can say (4095): found by its NUL
    blob = repo.git("hash-object", "-w", "z.txt")
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{long}")
    repo.git("update-index", "--index-version", version)
    entries = index_file.entries((repo / ".git" / "index").read_bytes(), 20)
    got = {name: want for name, want, _, _ in entries}
    staged = {line.split("\t")[1]: line.split(" ")[1] for line in repo.git("ls-files", "-s").splitlines()}
    assert {name: blob for name, _, _, blob in entries} == staged
    listed = repo.git("ls-files", "--debug")
    want = {}
    for name, ctime, mtime, ino, size in re.findall(
            r"^(\S+)\n\s+ctime: (\d+:\d+)\n\s+mtime: (\d+:\d+)\n\s+dev: \d+\s+ino: (\d+)\n.*?\n\s+size: (\d+)",
            listed, re.M | re.S):
        (cs, cn), (ms, mn) = ctime.split(":"), mtime.split(":")
        want[name] = (int(cs) * 10**9 + int(cn), int(ms) * 10**9 + int(mn), int(ino), int(size), name == "link")
    assert got == want and set(got) == {"a/b/c.txt", "a/b/d.txt", "a/e.txt", "z.txt", "link", "new.txt", long}


# rv33: with `core.trustctime = false` (yours), git's own stat check in `checkout-index --force` passed over a file
# the worker rewrote at the same size and put its mtime back; a sparse checkout's skip-worktree paths were neither
# compared nor listed, so a file the worker put there was read by the evaluators
TRUSTCTIME_WORKER = r"""#!/bin/sh
set -eu
echo x > note.txt; git add note.txt; git commit -qm note
python3 - <<'PY'
import os, re
st = os.stat("calc.py"); d = open("calc.py", "rb").read()
m = re.search(rb'\$Id: ([0-9a-f]{40}) \$', d)
inner = b'"; add = lambda a, b: a + b; W = "'.ljust(40)
open("calc.py", "wb").write(d[:m.start(1)] + inner + d[m.end(1):])
os.utime("calc.py", ns=(st.st_atime_ns, st.st_mtime_ns))
PY
"""
SPARSE_WORKER = r"""#!/bin/sh
set -eu
mkdir -p tests; printf 'def ok():\n    return True\n' > tests/check.py
echo y >> a.txt; git add a.txt; git commit -qm a
"""


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    BWRAP is not None, reason=f"bubblewrap does not work here: {BWRAP}"))])
@pytest.mark.parametrize("case", ["trustctime", "sparse"])
def test_what_gits_own_checks_pass_over_is_still_not_what_the_evaluators_judge(tmp_path, orch, mode, case):
    if case == "trustctime":
        dag = DAG.format(mode=mode, keep="").replace("file_surface: [calc.py]", "file_surface: [calc.py, note.txt]")
        repo = campaign_repo(tmp_path, dag, TRUSTCTIME_WORKER, {".gitattributes": "*.py ident\n",
                                                               "calc.py": 'def add(a, b):\n    return a - b\nV = "$Id$"\n'})
        repo.git("config", "core.trustctime", "false")
    else:
        dag = DAG.format(mode=mode, keep="").replace("file_surface: [calc.py]", "file_surface: [a.txt]").replace(
            "run: \"python3 -c 'import calc; assert calc.add(2, 2) == 4, calc.add(2, 2)'\"",
            "run: \"cd tests && python3 -c 'import check; assert check.ok()'\"")
        repo = campaign_repo(tmp_path, dag, SPARSE_WORKER, {"a.txt": "a\n", "tests/check.py": "def ok():\n    return False\n"})
        repo.git("sparse-checkout", "set", "--no-cone", "/*", "!/tests/")
    done = orch("run", "--no-interactive", cwd=repo)
    verdicts = [e["context"] for e in journal(repo, "alone") if e["kind"] == "gate" and e["context"]["gate"] == "evaluators"]
    assert verdicts and verdicts[0]["code"] != 0, done.out + done.err


def test_a_file_left_differing_only_by_crlf_is_no_failed_attempt_and_is_judged_as_committed(tmp_path, orch):
    """rv33: under `* text=auto` git tells a file that differs only by CRLF changed by its size alone, and `git add
    -A` then stages nothing: the leftover commit failed ("nothing to commit") and so did the attempt, for honest
    work. It is now written anew before judging, and the node judged on its commit."""
    worker = r"""#!/bin/sh
set -eu
echo a > a.txt; git add a.txt; git commit -qm a
printf 'exit 0\r\n' > ok.sh
"""
    dag = DAG.format(mode="none", keep="").replace("file_surface: [calc.py]", "file_surface: [a.txt]").replace(
        "run: \"python3 -c 'import calc; assert calc.add(2, 2) == 4, calc.add(2, 2)'\"", "run: \"sh ok.sh\"")
    repo = campaign_repo(tmp_path, dag, worker, {".gitattributes": "* text=auto\n", "ok.sh": "exit 0\n"})
    done = orch("run", "--no-interactive", cwd=repo)
    assert "ACCEPT" in done.out and "its attempt failed" not in done.out, done.out + done.err
