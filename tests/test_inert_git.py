"""Orchestrate's own git calls never run a hook or a program the repository's config names (DESIGN §14.2).

A hostile worker plants every kind in the shared git dir and leaves its change uncommitted, so that
orchestrate's own `add`, `commit`, `merge` and worktree calls are the next git to run there. Each planted
program would leave a mark; none may.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate import git
from tests.engine_helpers import campaign_repo, statuses
from tests.helpers import make_repo

HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit", "post-merge",
         "post-checkout", "reference-transaction", "post-rewrite", "pre-auto-gc", "post-index-change")

PLANT = r"""#!/bin/sh
set -e
common=$(git rev-parse --path-format=absolute --git-common-dir)
marks="$MARKS"
prog() { printf '#!/bin/sh\necho "%s" >> "%s/ran"\ncat\n' "$1" "$marks" > "$2"; chmod +x "$2"; }
mkdir -p "$common/hooks" "$common/evil-hooks" "$common/info"
for h in HOOKS; do prog "hook $h" "$common/hooks/$h"; prog "hooksPath $h" "$common/evil-hooks/$h"; done
prog fsmonitor "$common/fsmon"; prog filter "$common/filt"; prog textconv "$common/tconv"
prog merge-driver "$common/mdrv"; prog gpg "$common/gpg"; prog include-filter "$common/incf"
git config core.hooksPath "$common/evil-hooks"
git config core.fsmonitor "$common/fsmon"
git config filter.evil.clean "$common/filt"; git config filter.evil.smudge "$common/filt"
git config filter.evil.required true
git config diff.evil.textconv "$common/tconv"
git config merge.evil.driver "$common/mdrv %A"
git config commit.gpgSign true; git config gpg.program "$common/gpg"
printf '[filter "inc"]\n\tclean = %s\n\tsmudge = %s\n' "$common/incf" "$common/incf" > "$common/extra.cfg"
git config include.path "$common/extra.cfg"
printf '* filter=evil diff=evil merge=evil\n*.txt filter=inc\n' > "$common/info/attributes"
touch "$marks/planted"
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
""".replace("HOOKS", " ".join(HOOKS))

DAG = """\
topic: inert
defaults: {sandbox: MODE}
workers: {sh: "./work.sh"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""


@pytest.fixture(params=["bwrap", "none"])
def mode(request):
    if request.param == "bwrap":
        from orchestrate.workers import sandbox
        if (why := sandbox.probe()) is not None:
            pytest.skip(f"no sandbox here: {why}")
    return request.param


def test_nothing_planted_runs_inside_orchestrates_git(tmp_path, orch, monkeypatch, mode):
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    repo = campaign_repo(tmp_path, DAG.replace("MODE", mode), PLANT)
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc in (0, 1, 75), result.err
    if mode == "none":  # every plant landed before orchestrate's next git call
        assert (marks / "planted").exists(), result.out + result.err
        assert "changed what no worker may change" in result.out + result.err
    else:  # the shared git dir is read-only in the sandbox: the script stopped at its first write
        assert not (marks / "planted").exists()
        log = (repo / ".scratch/runs/inert/A/attempt-1.log").read_text()
        assert "read-only" in log.lower(), log
    assert not (marks / "ran").exists(), (marks / "ran").read_text()
    assert "A" in statuses(repo, orch, "inert")


def test_each_git_verb_is_inert_with_every_kind_planted(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    # A committed .gitattributes points at drivers only config defines: committed before they exist.
    repo = make_repo(tmp_path / "r", {"f.txt": "one\n", ".gitattributes": "*.txt filter=y diff=y merge=y\n"})
    common = repo / ".git"
    (common / "hooks").mkdir(exist_ok=True)
    for name in ("mark", *HOOKS):
        script = common / "hooks" / name
        script.write_text(f'#!/bin/sh\necho "{name}" >> "{marks}/ran"\ncat\n')
        script.chmod(0o755)
    mark = common / "hooks" / "mark"
    for key, value in (("core.fsmonitor", str(mark)), ("filter.x.clean", str(mark)), ("filter.x.smudge", str(mark)),
                       ("filter.x.required", "true"), ("diff.x.textconv", str(mark)),
                       ("merge.x.driver", f"{mark} %A"), ("commit.gpgSign", "true"), ("gpg.program", str(mark)),
                       ("filter.y.clean", str(mark)), ("filter.y.smudge", str(mark)), ("filter.y.process", str(mark)),
                       ("diff.y.command", str(mark)), ("diff.y.textconv", str(mark)), ("merge.y.driver", f"{mark} %A"),
                       ("diff.external", str(mark)), ("core.sshCommand", str(mark)), ("core.pager", str(mark)),
                       ("credential.helper", f"!{mark}"), ("core.askPass", str(mark))):
        repo.git("config", key, value)
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "attributes").write_text("* filter=x diff=x merge=x\n")
    base = git.out(repo, "rev-parse", "HEAD")
    git.git(repo, "checkout", "-q", "-b", "side")
    (repo / "f.txt").write_text("one\ntwo\n")
    git.commit_all(repo, "side")
    git.git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text("zero\none\n")
    git.commit_all(repo, "main")
    git.git(repo, "merge", "--no-ff", "--no-edit", "side")
    wt = tmp_path / "wt"
    git.worktree_add(repo, wt, "node", base)
    git.changed_paths(repo, base, "HEAD")
    git.git(repo, "diff", "--stat", base, "HEAD")
    patch = git.out(repo, "diff", base, "HEAD")  # a patch: where diff.external and a diff driver would run
    assert "+two" in patch and "+zero" in patch, patch
    git.git(repo, "log", "-p", "-2")
    git.git(repo, "ls-remote", "ssh://127.0.0.1:1/x", check=False, timeout=30)  # where core.sshCommand would run
    git.git(repo, "credential", "fill", input="protocol=https\nhost=example.invalid\n\n", check=False, timeout=30)
    git.worktree_remove(repo, wt)
    assert not (marks / "ran").exists(), (marks / "ran").read_text()
    assert Path(repo / "f.txt").read_text() == "zero\none\ntwo\n"  # the built-in text merge did the merge


def test_a_driver_named_with_an_escape_in_its_config_section_is_neutralised_too(tmp_path):
    """git reads `[filter "a\\x"]` as the filter `ax` (it drops a backslash before any character in a quoted
    subsection): the override must name the same driver, or the planted smudge runs in our checkout."""
    mark = tmp_path / "ran"
    repo = make_repo(tmp_path / "r", {"f.txt": "one\n", ".gitattributes": "* filter=ax\n"})
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\ntouch "{mark}"\ncat\n')
    evil.chmod(0o755)
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f'[filter "a\\x"]\n\tsmudge = {evil}\n\tclean = {evil}\n')
    assert repo.git("config", "filter.ax.smudge") == str(evil)  # git's own reading of the section
    (repo / "f.txt").write_text("two\n")
    git.git(repo, "checkout", "HEAD", "--", "f.txt")
    git.git(repo, "status")
    assert not mark.exists(), "a planted filter ran inside orchestrate's git"


@pytest.mark.parametrize("include", ["[include]\n\tpath = ~/.gitconfig.local\n", "[include]\n\tPath = ~/.gitconfig.local\n",
                                     "[include] path = ~/.gitconfig.local\n",
                                     "[include]\n\tpath = ~/.gitconfig.local ; a comment\n",
                                     '[includeIf "gitdir:/"]\n\tpath = "~/.gitconfig.local"\n'])
def test_a_driver_planted_in_a_file_the_config_includes_is_neutralised_after_a_warm_call(tmp_path, monkeypatch, include):
    """$HOME is writable in the sandbox, and `include.path = ~/.gitconfig.local` is a common pattern: a driver
    written into the included file after orchestrate's git already ran there must not run in its next call
    (the drivers found were cached by the stamps of the top-level config files alone)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    (home / ".gitconfig").write_text(include + "[user]\n\tname = t\n\temail = t@example.com\n")
    (home / ".gitconfig.local").write_text("")
    mark = tmp_path / "ran"
    repo = make_repo(tmp_path / "r", {"f.txt": "one\n", ".gitattributes": "* filter=x\n"})
    git.git(repo, "status")  # warm: the drivers of this repository's config are known
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\ntouch "{mark}"\ncat\n')
    evil.chmod(0o755)
    (home / ".gitconfig.local").write_text(f'[filter "x"]\n\tsmudge = {evil}\n\tclean = {evil}\n')
    assert repo.git("config", "filter.x.smudge") == str(evil)  # git's own reading: the include is live
    (repo / "f.txt").write_text("two\n")
    git.git(repo, "checkout", "HEAD", "--", "f.txt")
    git.git(repo, "status")
    assert not mark.exists(), "a filter planted in an included file ran inside orchestrate's git"


def test_a_driver_planted_at_the_same_size_with_the_mtime_put_back_is_still_neutralised(tmp_path):
    """The drivers found are cached by the config files' stat data: a rewrite that keeps the size and puts
    the mtime back must still be read again (the ctime and inode cannot be put back)."""
    import os

    mark = tmp_path / "ran"
    repo = make_repo(tmp_path / "r", {"f.txt": "one\n", ".gitattributes": "* filter=y\n"})
    evil = tmp_path / "e.sh"
    evil.write_text(f'#!/bin/sh\ntouch "{mark}"\ncat\n')
    evil.chmod(0o755)
    config = repo / ".git" / "config"
    planted = config.read_text() + f'[filter "y"]\n\tsmudge = {evil}\n'
    padded = config.read_text() + "#" * (len(planted) - len(config.read_text()) - 1) + "\n"
    config.write_text(padded)
    git.git(repo, "status")  # warm: no driver defined yet
    before = config.stat()
    config.write_text(planted)
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert config.stat().st_size == before.st_size and config.stat().st_mtime_ns == before.st_mtime_ns
    (repo / "f.txt").write_text("two\n")
    git.git(repo, "checkout", "HEAD", "--", "f.txt")
    assert not mark.exists(), "a filter planted behind an unchanged size and mtime ran inside orchestrate's git"


def test_checking_a_signature_or_tracing_runs_and_writes_nothing_a_config_names(tmp_path, home):
    """rv37: ~/.gitconfig is writable in the sandbox. `merge.verifySignatures` or `log.showSignature` there, with a
    `gpg.program`, had orchestrate's own merge and log run that program outside the sandbox on a commit carrying
    any `gpgsig` header; a trace2 target had its git append to a file workers cannot write."""
    import subprocess
    repo = make_repo(tmp_path / "r", {"f.txt": "one\n"})
    body = (f"tree {repo.git('rev-parse', 'HEAD^{tree}')}\nparent {repo.git('rev-parse', 'HEAD')}\n"
            "author a <a@x> 0 +0000\ncommitter a <a@x> 0 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n x\n -----END PGP SIGNATURE-----\n\nsigned\n")
    signed = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, check=True, text=True,
                            capture_output=True, input=body).stdout.strip()
    marks = tmp_path / "ran"
    program = home / "gpg.sh"
    program.write_text(f'#!/bin/sh\necho "$@" >> "{marks}"\ncat > /dev/null\nexit 1\n')
    program.chmod(0o755)
    traced = repo / "traced.txt"
    with (home / ".gitconfig").open("a") as fh:
        fh.write(f"[gpg]\n\tprogram = {program}\n[gpg \"ssh\"]\n\tprogram = {program}\n[gpg \"x509\"]\n"
                 f"\tprogram = {program}\n[merge]\n\tverifySignatures = true\n[log]\n\tshowSignature = true\n"
                 f"[trace2]\n\tnormalTarget = {traced}\n\teventTarget = {traced}\n\tperfTarget = {traced}\n")
    assert subprocess.run(["git", "log", "-1", signed], cwd=repo, capture_output=True).returncode == 0
    assert marks.exists() and traced.exists()  # what plain git does with that config: the plant works
    marks.unlink()
    traced.unlink()
    git.commit_subjects(repo, signed)
    git.git(repo, "log", "-1", "--format=%H %G?", signed)
    git.git(repo, "checkout", "-q", "-b", "side", "HEAD")
    (repo / "g.txt").write_text("two\n")
    git.commit_all(repo, "side")
    assert git.git(repo, "merge", "--no-ff", "--no-edit", signed, check=False)  # nothing to verify: merged
    assert not marks.exists(), marks.read_text()
    assert not traced.exists(), traced.read_text()[:300]
