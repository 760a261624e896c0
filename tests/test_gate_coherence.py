"""The coherence gate on real repositories: orphans, links and anchors, the DAG, project gates and evaluators
(predicate.md §3.2, §3.3, §8.3, §8.6 adapted to paths and names; §9.2: URLs, renames, missing evaluators)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gates import coherence
from gates.shared import markdown
from tests.helpers import RepoDir

WORKFLOW_DAG = """\
topic: demo
workers: {core: "true"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: core}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: core}
"""


def make_ledger(tmp_path: Path, config: str | None = None, gates: dict[str, str] | None = None,
                mode: int = 0o755) -> Path:
    ledger = tmp_path / "ledger"
    (ledger / "gates").mkdir(parents=True, exist_ok=True)
    if config is not None:
        (ledger / "config.yaml").write_text(config)
    for name, script in (gates or {}).items():
        (ledger / "gates" / name).write_text(script)
        (ledger / "gates" / name).chmod(mode)
    return ledger


def judge(repo: RepoDir, base: str, head: str = "HEAD", **kw):
    kw.setdefault("ledger", None)
    return coherence.check(repo, base, head, **kw)


def remove(repo: RepoDir, seed: dict[str, str], *paths: str) -> str:
    """Commit `seed`, then a commit deleting `paths`; returns the base (the seed commit)."""
    repo.commit("seed", seed)
    base = repo.head()
    repo.git("rm", "-q", "-r", *paths)
    repo.commit("remove " + " ".join(paths))
    return base


def lines(verdict, status: str) -> list[str]:
    return [i.line() for i in verdict.items if i.status == status]


# ---- 1. references ----------------------------------------------------------------------------

def test_a_deleted_file_still_referenced_is_an_orphan_with_path_line_and_text(repo):
    base = remove(repo, {"docs/old.md": "# Old\n", "docs/guide.md": "Intro.\nRead docs/old.md first.\n"},
                  "docs/old.md")
    v = judge(repo, base)
    assert v.code == 1 and v.summary == "INCOHERENT: 1 check(s) failed"
    assert lines(v, "ORPHAN") == [f"{'ORPHAN':<10} docs/guide.md:2: Read docs/old.md first.  "
                                  "<- refers to removed docs/old.md"]
    assert v.data["cut_set"] == ["docs/old.md"]
    assert any(i.line().startswith("FAIL") and i.subject == "references" for i in v.items)


def test_clean_prose_is_coherent(repo):
    base = remove(repo, {"ghost.md": "x\n", "notes.md": "Formerly this referenced a workflow since removed.\n"},
                  "ghost.md")
    v = judge(repo, base)
    assert v.code == 0, v.lines()
    assert v.summary == "COHERENT: every check passed"
    assert f"{'PASS':<10} references: no surviving reference to 1 removed name(s)" in v.lines()


@pytest.mark.parametrize("text, orphan", [
    ("see docs/old.md.bak and mydocs/old.md and x/docs/old.md", False),
    ("docs/old.md-v2 and docs/old.mdx", False),
    ("See docs/old.md.", True),
    ("(docs/old.md)", True),
    ("run ./docs/old.md now", True),
    ("`docs/old.md`", True),
])
def test_paths_match_on_path_boundaries(repo, text, orphan):
    base = remove(repo, {"docs/old.md": "x\n", "docs/keep.md": "y\n", "a.txt": text + "\n"}, "docs/old.md")
    assert judge(repo, base).code == (1 if orphan else 0)


def test_a_rename_counts_as_removal_of_the_old_path(repo):
    repo.commit("seed", {"src/tool.py": "print(1)\n", "README.md": "# p\n\nRun src/tool.py.\n"})
    base = repo.head()
    repo.git("mv", "src/tool.py", "src/cli.py")
    repo.commit("rename")
    v = judge(repo, base)
    assert v.code == 1
    assert [(i.subject, i.detail) for i in v.items if i.status == "ORPHAN"] == [
        ("README.md:3: Run src/tool.py.", "refers to removed src/tool.py")]


def test_a_url_hides_only_its_own_occurrence(repo):
    base = remove(repo, {"docs/old.md": "x\n",
                         "a.md": "Mirror: https://example.com/docs/old.md only\n",
                         "b.md": "https://example.com/?p=docs/old.md and docs/old.md itself\n"}, "docs/old.md")
    v = judge(repo, base)
    assert v.code == 1
    assert [i.subject for i in v.items if i.status == "ORPHAN"] == [
        "b.md:1: https://example.com/?p=docs/old.md and docs/old.md itself"]


def test_a_configured_name_is_part_of_the_cut_set(repo, tmp_path):
    ledger = make_ledger(tmp_path, "coherence:\n  names: [ghost]\n")
    repo.commit("seed", {"skills/survivor/SKILL.md": "run the /ghost workflow\n"})
    base = repo.head()
    repo.commit("unrelated", {"other.txt": "x\n"})
    v = judge(repo, base, ledger=ledger)
    assert v.code == 1 and v.data["cut_set"] == ["ghost"]
    assert lines(v, "ORPHAN") == [f"{'ORPHAN':<10} skills/survivor/SKILL.md:1: run the /ghost workflow  "
                                  "<- refers to removed ghost"]


def test_configured_names_do_not_match_inside_other_names(repo, tmp_path):
    ledger = make_ledger(tmp_path, "coherence:\n  names: [core, sketch, dialectic]\n")
    repo.commit("seed", {"doc.md": "Use /predicate-core, `predicate`, the predicate workflow, skills/predicate/.\n"
                                   "A sketchy dialectical coreless note.\n"})
    base = repo.head()
    repo.commit("unrelated", {"other.txt": "x\n"})
    assert judge(repo, base, ledger=ledger).code == 0


def test_a_given_name_matches_as_an_invocation_but_not_a_longer_one(repo):
    repo.commit("seed", {"doc.md": "Run /planning or /plan-review.\n"})
    base = repo.head()
    repo.commit("unrelated", {"other.txt": "x\n"})
    assert judge(repo, base, names=["plan"]).code == 0
    repo.commit("invoke", {"doc.md": "Run the /plan workflow to begin.\n"})
    v = judge(repo, base, names=["plan"])
    assert v.code == 1 and lines(v, "ORPHAN")[0].endswith("<- refers to removed plan")


def test_missing_config_means_no_extra_names_but_a_malformed_one_is_2_naming_the_file(repo, tmp_path):
    repo.commit("seed", {"doc.md": "the ghost workflow\n"})
    base = repo.head()
    repo.commit("unrelated", {"other.txt": "x\n"})
    ledger = make_ledger(tmp_path)
    assert judge(repo, base, ledger=ledger).code == 0
    for text in ("coherence: [not, a, mapping]\n", "coherence:\n  names: ghost\n", "coherence:\n  nmes: [ghost]\n",
                 "coherence: {names: [ghost]\n", "coherence:\n  names: [a]\n  names: [b]\n"):
        (ledger / "config.yaml").write_text(text)
        v = judge(repo, base, ledger=ledger)
        assert v.code == 2 and str(ledger / "config.yaml") in v.summary, (text, v.summary)
    (ledger / "config.yaml").write_text("coherence:\n  nmes: [ghost]\n")
    assert "did you mean `names`" in judge(repo, base, ledger=ledger).summary


def test_ledger_scratch_ignored_paths_and_binary_files_are_not_searched(repo, tmp_path):
    ledger = make_ledger(tmp_path, "coherence:\n  ignore: [CHANGELOG.md]\n")
    base = remove(repo, {"tool.sh": "x\n", ".scratch/notes.md": "tool.sh\n", ".ledger/log.md": "tool.sh\n",
                         "CHANGELOG.md": "removed tool.sh\n", "blob.bin": "\0tool.sh\0"}, "tool.sh")
    assert judge(repo, base, ledger=ledger).code == 0
    assert judge(repo, base).code == 1  # without the ignore list, the changelog counts


def test_a_vanished_directory_is_in_the_cut_set(repo):
    base = remove(repo, {"tools/old/run.sh": "x\n", "doc.md": "The tools/old/ folder holds helpers.\n"}, "tools/old")
    v = judge(repo, base)
    assert v.code == 1 and v.data["cut_set"] == ["tools/", "tools/old/", "tools/old/run.sh"]
    assert [i.detail for i in v.items if i.status == "ORPHAN"] == ["refers to removed tools/old/"]


def test_a_relative_link_in_an_unchanged_doc_to_a_deleted_file_is_an_orphan(repo):
    base = remove(repo, {"docs/old.md": "x\n", "docs/guide.md": "See [the old notes](old.md).\n"}, "docs/old.md")
    v = judge(repo, base)
    assert v.code == 1
    assert [(i.subject, i.detail) for i in v.items if i.status == "ORPHAN"] == [
        ("docs/guide.md:1: See [the old notes](old.md).", "refers to removed docs/old.md (relative link old.md)")]


# ---- 2. links ---------------------------------------------------------------------------------

def links_case(repo: RepoDir, index: str):
    repo.commit("seed", {"docs/target.md": "# Target\n\n## Install steps!\n\n## Usage\n\n## Usage\n",
                         "docs/img/logo.png": "png\n", "README.md": "# project\n"})
    base = repo.head()
    repo.commit("links", {"docs/index.md": index})
    return judge(repo, base)


def test_good_links_and_anchors_resolve(repo):
    v = links_case(repo, "# Index\n\n[t](target.md) [s](target.md#install-steps) [dup](target.md#usage-1) "
                         "[root](/README.md) [dir](img/) ![logo](img/logo.png) [self](#index) "
                         "[web](https://x.org/gone.md) [mail](mailto:a@b.c)\n\n[ref]: ../README.md#project\n")
    assert v.code == 0, v.lines()
    assert f"{'PASS':<10} links: 8 link(s) in 1 changed markdown file(s) resolve" in v.lines()


def test_a_link_to_a_missing_file_is_broken(repo):
    v = links_case(repo, "Intro.\n[gone](missing.md) and [up](../../outside.md)\n")
    assert v.code == 1 and v.summary == "INCOHERENT: 1 check(s) failed"
    assert lines(v, "BROKEN") == [
        f"{'BROKEN':<10} docs/index.md:2: [gone](missing.md)  <- no such file",
        f"{'BROKEN':<10} docs/index.md:2: [up](../../outside.md)  <- no such file (it would be outside the repository)"]


def test_a_symbolic_link_leading_out_of_the_repository_or_into_git_is_broken(repo):
    """A sandboxed worker can write $HOME: a committed `conftest.py -> ~/.cache/x/conftest.py` has the evaluators,
    and anyone who later runs the merged tests, read a file no gate ever saw. Links inside the repository pass,
    dangling or not; one the range did not touch is not judged."""
    import os
    (repo / "old").symlink_to("/etc/hostname")
    repo.commit("a link of yours, already there")
    base = repo.head()
    (repo / "tests").mkdir()
    for name, target in (("tests/conftest.py", "/root/.cache/x/conftest.py"), ("tests/up", "../../outside"),
                         ("tests/hook", "../.GIT/hooks/pre-commit"), ("tests/fine", "../README.md"),
                         ("tests/later", "../build/out"), ("tests/dir", ".."), ("tests/runs", "../.scratch/runs")):
        os.symlink(target, repo / name)
    repo.commit("links")
    v = judge(repo, base)
    assert v.code == 1 and "links" in v.data["failed"], v.lines()
    assert lines(v, "BROKEN") == [
        f"{'BROKEN':<10} tests/conftest.py -> /root/.cache/x/conftest.py  <- a symbolic link leading out of the "
        "repository",
        f"{'BROKEN':<10} tests/hook -> ../.GIT/hooks/pre-commit  <- a symbolic link leading into the git dir",
        f"{'BROKEN':<10} tests/runs -> ../.scratch/runs  <- a symbolic link leading into orchestrate's working copies",
        f"{'BROKEN':<10} tests/up -> ../../outside  <- a symbolic link leading out of the repository"]
    assert f"{'FAIL':<10} links  <- 4 of 0 link(s) in 0 changed markdown file(s) and 7 symbolic link(s) made or " \
           "re-pointed do not resolve or lead out" in v.lines()
    for name in ("conftest.py", "up", "hook", "runs"):
        (repo / "tests" / name).unlink()
    (repo / "tests" / "conftest.py").write_text("# a file again\n")
    repo.commit("files again")
    v = judge(repo, base)
    assert v.code == 0 and f"{'PASS':<10} links: 0 link(s) in 0 changed markdown file(s) and 3 symbolic link(s) " \
        "made or re-pointed resolve, inside the repository" in v.lines()


def test_a_chain_of_links_is_followed_as_the_kernel_follows_it(repo):
    """rv30: `s -> .` then `t -> s/..`: read as text, `s/..` is `.`; followed, `s` is the top and `..` its parent.
    A link of yours that a link the range made (or re-pointed) now leads out through is judged too; a loop is
    broken; links of yours the range left alone are not."""
    import os
    os.symlink("lib/..", repo / "yours")  # inside, as long as lib is a folder
    (repo / "lib").mkdir()
    (repo / "lib" / "x.txt").write_text("x\n")
    os.symlink("/etc", repo / "untouched")
    repo.commit("your links")
    base = repo.head()
    os.symlink(".", repo / "s")
    os.symlink("s/s/s/../..", repo / "t")
    os.symlink("s/.git", repo / "g")
    os.symlink("loop2", repo / "loop1")
    os.symlink("loop1", repo / "loop2")
    (repo / "lib" / "x.txt").unlink()
    (repo / "lib").rmdir()
    os.symlink(".", repo / "lib")  # a folder made a link: `yours` -> lib/.. now leads out
    repo.git("add", "-A")
    repo.git("commit", "-qm", "chains")
    assert lines(judge(repo, base), "BROKEN") == [
        f"{'BROKEN':<10} g -> s/.git  <- a symbolic link leading into the git dir",
        f"{'BROKEN':<10} loop1 -> loop2  <- a symbolic link leading round a loop of links",
        f"{'BROKEN':<10} loop2 -> loop1  <- a symbolic link leading round a loop of links",
        f"{'BROKEN':<10} t -> s/s/s/../..  <- a symbolic link leading out of the repository",
        f"{'BROKEN':<10} yours -> lib/..  <- a symbolic link leading out of the repository"]


def test_a_bad_anchor_is_broken(repo):
    v = links_case(repo, "[bad](target.md#nope) [usage](target.md#usage-2) [self](#nowhere)\n")
    assert v.code == 1
    assert [i.detail for i in v.items if i.status == "BROKEN"] == [
        "no heading #nope in docs/target.md", "no heading #usage-2 in docs/target.md",
        "no heading #nowhere in docs/index.md"]


def test_links_in_code_are_ignored(repo):
    v = links_case(repo, "```md\n[in fence](nowhere.md)\n```\n\n~~~~\n[tilde](gone.md)\n~~~~\n"
                         "Inline `[span](nowhere.md)` and <!-- [comment](gone.md) -->\n")
    assert v.code == 0, v.lines()
    assert f"{'PASS':<10} links: 0 link(s) in 1 changed markdown file(s) resolve" in v.lines()


def test_only_changed_markdown_files_are_link_checked(repo):
    repo.commit("seed", {"old.md": "[gone](never-existed.md)\n"})
    base = repo.head()
    repo.commit("unrelated", {"new.txt": "[gone](never-existed.md)\n"})
    assert judge(repo, base).code == 0


def test_github_slugs():
    text = ("# Hello, World!\n## C++ & Rust\n## Hello, World!\n## `__init__.py` _notes_\nSetext\n===\n"
            "```\n# not a heading\n```\n<a name=\"Custom\"></a>\n")
    assert markdown.anchors(text) == {"hello-world", "c--rust", "hello-world-1", "__init__py-notes", "setext",
                                      "custom"}
    assert markdown.slug("`net.connect(port[, host][, listener])`") == "netconnectport-host-listener"
    assert markdown.slug("See [the guide](g.md) <br>") == "see-the-guide"
    assert [(ln.line, ln.source()) for ln in markdown.links("[![b](i.svg)](t.md) [x](<a b.md>)\n")] == [
        (1, "[![b](i.svg)](t.md)"), (1, "![b](i.svg)"), (1, "[x](<a b.md>)")]


# ---- 3. dag -----------------------------------------------------------------------------------

def test_the_dag_must_still_validate(repo, tmp_path):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    dag = tmp_path / "dag.yaml"
    dag.write_text(WORKFLOW_DAG)
    assert judge(repo, base, dag_path=dag, topic="demo").code == 0
    dag.write_text(WORKFLOW_DAG.replace("depends_on: [A]", "depends_on: [Z]"))
    v = judge(repo, base, dag_path=dag, topic="demo")
    assert v.code == 1 and v.summary == "INCOHERENT: 1 check(s) failed"
    assert any(i.line().startswith(f"{'FAIL':<10} dag  <- 1 problem(s): ") and "`Z`" in i.detail for i in v.items)


# ---- 4. project gates and evaluators ----------------------------------------------------------

ENV_GATE = ('#!/bin/sh\ntest "$ORCH_TOPIC" = demo && test "$ORCH_HEAD" = "$(git rev-parse HEAD)" '
            '&& test -n "$ORCH_BASE" && test -f x.txt\n')


def test_project_gates_pass_and_fail_in_sorted_order(repo, tmp_path):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    ledger = make_ledger(tmp_path, gates={"20-env": ENV_GATE, "10-ok": "#!/bin/sh\nexit 0\n"})
    (ledger / "gates" / "README.md").write_text("not a gate\n")
    (ledger / "gates" / ".hidden").write_text("not a gate either\n")
    v = judge(repo, base, ledger=ledger, topic="demo")
    assert v.code == 0, v.lines()
    assert [i.subject for i in v.items if i.subject.startswith("gate ")] == ["gate 10-ok", "gate 20-env"]
    (ledger / "gates" / "10-ok").write_text("#!/bin/sh\necho 'tests red' >&2\nexit 3\n")
    v = judge(repo, base, ledger=ledger, topic="demo")
    assert v.code == 1 and v.summary == "INCOHERENT: 1 check(s) failed"
    assert f"{'FAIL':<10} gate 10-ok  <- rc 3: tests red" in v.lines()


def test_project_gates_run_at_head_even_when_the_checkout_is_elsewhere(repo, tmp_path):
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("x", {"x.txt": "x\n"})
    repo.git("checkout", "-q", "main")
    ledger = make_ledger(tmp_path, gates={"10-env": ENV_GATE})
    assert judge(repo, base, "feature", ledger=ledger, topic="demo").code == 0
    assert len(repo.git("worktree", "list").splitlines()) == 1  # the throwaway worktree is gone


def test_a_non_executable_gate_is_2(repo, tmp_path):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    ledger = make_ledger(tmp_path, gates={"10-check": "#!/bin/sh\nexit 0\n"}, mode=0o644)
    v = judge(repo, base, ledger=ledger)
    assert v.code == 2 and "could not run" in v.summary
    assert f"{'ERROR':<10} gate 10-check  <- not executable: chmod +x or remove it" in v.lines()


def test_project_gates_can_be_left_to_the_boundary(repo, tmp_path):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    ledger = make_ledger(tmp_path, gates={"10-red": "#!/bin/sh\nexit 1\n"})
    assert judge(repo, base, ledger=ledger, project_gates=False).code == 0


@pytest.mark.parametrize("run, code", [("true", 0), ("exit 1", 1), ("no-such-link-checker .", 2)])
def test_evaluators_pass_fail_or_cannot_run(repo, tmp_path, run, code):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    ledger = make_ledger(tmp_path, f"coherence:\n  evaluators: [{{name: checker, run: '{run}'}}]\n")
    v = judge(repo, base, ledger=ledger)
    assert v.code == code, v.lines()
    if code == 2:
        assert v.summary == "ERROR: 1 gate(s) or evaluator(s) could not run: evaluator checker"


# ---- usage and the CLI ------------------------------------------------------------------------

def test_bad_refs_and_missing_repositories_are_2(repo, tmp_path):
    assert judge(repo, "no-such-ref").code == 2
    assert judge(repo, repo.head(), "no-such-ref").code == 2
    v = coherence.check(tmp_path / "nowhere", "HEAD", "HEAD")
    assert v.code == 2 and "no such directory" in v.summary
    (tmp_path / "plain").mkdir()
    assert "not inside a git repository" in coherence.check(tmp_path / "plain", "HEAD", "HEAD").summary


def test_cli_exit_codes(repo, orch, tmp_path):
    base = remove(repo, {"old.md": "x\n", "doc.md": "the ghost workflow\n"}, "old.md")
    ok = orch("gate", "coherence", "--base", base, "--repo", repo)
    assert ok.rc == 0 and ok.out.splitlines()[-1].startswith("COHERENT: ")
    named = orch("gate", "coherence", "--base", base, "--repo", repo, "--name", "ghost", "--json")
    verdict = json.loads(named.out)
    assert named.rc == 1 and verdict["code"] == 1 and verdict["data"]["cut_set"] == ["ghost", "old.md"]
    bad = orch("gate", "coherence", "--base", "no-such-ref", "--repo", repo)
    assert bad.rc == 2 and "no-such-ref" in bad.err and "Traceback" not in bad.err
    missing = orch("gate", "coherence", "--base", base, "--repo", repo, "--ledger", tmp_path / "nope")
    assert missing.rc == 2 and "no such ledger directory" in missing.err


def test_cli_wrong_arguments_and_help(orch):
    wrong = orch("gate", "coherence")
    assert wrong.rc == 2 and wrong.err.startswith("usage:") and "--base" in wrong.err
    assert "Traceback" not in wrong.err
    assert orch("gate", "coherence", "--base", "x", "--bogus").rc == 2
    helped = orch("gate", "coherence", "--help")
    assert helped.rc == 0 and "Exit codes:" in helped.out
    for code in ("0  COHERENT", "1  INCOHERENT", "2  bad refs"):
        assert code in helped.out


def test_a_link_whose_name_is_not_utf8_is_refused_with_a_reason(repo):
    """rv30, rv31: git's output is read as UTF-8, each byte that is not read as U+FFFD, so such names read alike
    and a chain through one was not followed (byte 0xff -> . then t -> 0xff/.. passed; 0xfe -> /etc/passwd was
    hidden behind 0xfd -> README.md). Such a link (the three read alike: said once), or a chain through such a
    name, is refused, saying why."""
    import os
    base = repo.head()
    top = os.fsencode(repo)
    for name, target in ((b"\xff", b"."), (b"t", b"\xff/.."), (b"\xfe", b"/etc/passwd"), (b"\xfd", b"README.md")):
        os.symlink(target, os.path.join(top, name))
    repo.git("add", "-A")
    repo.git("commit", "-qm", "links named in latin-1")
    v = judge(repo, base)
    assert v.code == 1, v.lines()
    refused = [line for line in lines(v, "BROKEN") if "not UTF-8" in line]
    assert len(refused) == 2 and refused[1].startswith(f"{'BROKEN':<10} t -> \ufffd/..")


def test_a_gitlink_fetched_from_this_machine_is_broken(repo):
    """rv30: a sandboxed worker made a repository in ~/.cache/x, committed a gitlink to it and a .gitmodules url
    naming it: ACCEPT, and your next `git submodule update` fetched what no gate saw. A network url is a
    dependency like any other, and so is one relative to a network remote; a gitlink .gitmodules does not name
    (an embedded repository a leftover commit took in) is broken too. rv31: `.gitmodules` is read as git reads
    it (a path belongs to the submodule that named it last), a path without `./` is taken from the top, and a
    url relative to no remote, or to a remote that is a path, names a folder here."""
    base = repo.head()
    (repo / ".gitmodules").write_text(
        '[submodule "v"]\n\tpath = vendor\n\turl = /root/.cache/x\n[submodule "lib"]\n\tpath = lib\n'
        '\turl = https://example.com/lib.git\n[submodule "rel"]\n\tpath = rel\n\turl = ../rel.git\n'
        '[submodule "f"]\n\tpath = f\n\turl = file:///srv/f.git\n[submodule "scp"]\n\tpath = scp\n'
        '\turl = git@example.com:a/scp.git\n[SUBMODULE "A"]\n\tpath = dup\n\tURL = /tmp/evil\n'
        '[submodule "B"]\n\tpath = dup\n\turl = https://example.com/b.git\n[submodule "A"]\n\tpath = dup\n'
        '[submodule "up"]\n\tpath = up\n\turl = sub/../../evil\n')
    repo.git("add", ".gitmodules")
    for path in ("vendor", "lib", "rel", "f", "scp", "dup", "up", "bare"):
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{base},{path}")
    repo.git("commit", "-qm", "submodules")

    def broken(*found):
        return [f"{'BROKEN':<10} {path} (a gitlink, url {url})  <- a submodule fetched from this machine: what it "
                "holds is never judged" for path, url in found]
    here = (("bare", "(no url in .gitmodules)"), ("dup", "/tmp/evil"), ("f", "file:///srv/f.git"))
    later = (("up", "sub/../../evil"), ("vendor", "/root/.cache/x"))
    assert lines(judge(repo, base), "BROKEN") == broken(*here, ("rel", "../rel.git"), *later)  # no remote
    repo.git("remote", "add", "origin", "/srv/project.git")
    assert lines(judge(repo, base), "BROKEN") == broken(*here, ("rel", "../rel.git"), *later)
    repo.git("remote", "set-url", "origin", "https://example.com/project.git")
    assert lines(judge(repo, base), "BROKEN") == broken(*here, *later)
    # rv32: `../../x` from `git@host:project` cuts into the host (`.:x`, a folder here), as does an scp url whose
    # host is dots; `../x` stays on the host
    repo.git("remote", "set-url", "origin", "git@example.com:project")
    assert lines(judge(repo, base), "BROKEN") == broken(*here, *later)
    (repo / ".gitmodules").write_text(
        '[submodule "a"]\n\tpath = lib\n\turl = ../../lib\n[submodule "b"]\n\tpath = rel\n\turl = ../rel.git\n'
        '[submodule "c"]\n\tpath = scp\n\turl = .:lib\n[submodule "d"]\n\tpath = up\n\turl = .././../up\n')
    repo.git("add", ".gitmodules")
    repo.git("commit", "-qm", "climbing")
    assert lines(judge(repo, base), "BROKEN") == broken(
        ("bare", "(no url in .gitmodules)"), ("dup", "(no url in .gitmodules)"), ("f", "(no url in .gitmodules)"),
        ("lib", "../../lib"), ("scp", ".:lib"), ("up", ".././../up"), ("vendor", "(no url in .gitmodules)"))
