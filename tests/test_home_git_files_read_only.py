"""Your git files and start-up files in $HOME are read-only in the sandbox, though $HOME is writable (rv74): a
worker's `git config --global`, or a line an installer appends to ~/.bashrc, fails there, as its own. Before, the write went through, the watch put it back, and
since it could not tell whose it was it failed every attempt running beside it: a finished node's work and
an attempt of its were thrown away for another node's deed."""
from __future__ import annotations

import pytest

from orchestrate.workers import sandbox
from tests.engine_helpers import campaign_repo, statuses
from tests.helpers import IDENTITY

NO_SANDBOX = sandbox.probe()
pytestmark = pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox here: {NO_SANDBOX}")

# Culprit tries to set an alias in your ~/.gitconfig, then says it is done; Innocent runs until then (so the
# write lands while it runs, whatever the timing), for at most a minute.
WORKER = r"""#!/bin/sh
case "$ORCH_NODE" in
  Culprit) if git config --global alias.zz status; then echo wrote; else echo refused; fi > b/said
           touch "$HOME/culprit-done" ;;
  Innocent) n=0; while [ ! -e "$HOME/culprit-done" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
            echo done >> a/x ;;
esac
"""

DAG = """\
topic: home
mode: autonomous
defaults: {timeout: 120, max_attempts: 1, sandbox: bwrap}
workers: {sh: ./work.sh}
nodes:
  - {id: Innocent, title: i, file_surface: [a/], discipline: sh}
  - {id: Culprit, title: c, file_surface: [b/], discipline: sh}
"""


def test_a_workers_write_to_your_git_config_fails_in_its_sandbox_and_no_one_else_pays(tmp_path, orch, home):
    repo = campaign_repo(tmp_path, DAG, WORKER, files={"a/x": "a\n", "b/x": "b\n"})
    result = orch("run", "--jobs", "2", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75 and "seam final-acceptance" in text, text
    assert (home / ".gitconfig").read_text() == IDENTITY
    assert "changed what no worker may change" not in text
    assert repo.git("show", "campaign/home:b/said") == "refused"
    assert repo.git("show", "campaign/home:a/x") == "a\ndone"
    assert statuses(repo, orch, "home") == {"Culprit": "ACCEPTED", "Innocent": "ACCEPTED"}


# The same for your shell's start-up files: Culprit appends to one (or adds a file to a folder your shell sources).
STARTUP = r"""#!/bin/sh
case "$ORCH_NODE" in
  Culprit) if sh -c "$WRITE"; then echo wrote; else echo refused; fi > b/said
           touch "$HOME/culprit-done" ;;
  Innocent) n=0; while [ ! -e "$HOME/culprit-done" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
            echo done >> a/x ;;
esac
"""


@pytest.mark.parametrize("made, write", [
    (".bashrc", 'echo "export PATH=/opt/evil:\\$PATH" >> "$HOME/.bashrc"'),
    (".profile", 'printf "x\\n" > "$HOME/.profile.new" && mv "$HOME/.profile.new" "$HOME/.profile"'),
    (".bashrc.d/", 'echo "alias ls=evil" > "$HOME/.bashrc.d/evil.sh"'),
    # a link to your dotfiles' folder, which the watch never lists through (rv40): only the sandbox guards it
    (".bashrc.d@", 'echo "alias ls=evil" > "$HOME/.bashrc.d/evil.sh"'),
])
def test_a_workers_write_to_your_start_up_files_fails_in_its_sandbox_and_no_one_else_pays(
        tmp_path, orch, home, monkeypatch, made, write):
    if made.endswith("@"):
        dotfiles = home / "dotfiles" / "bashrc.d"  # where a dotfiles checkout lives, in the writable $HOME
        dotfiles.mkdir(parents=True)
        (dotfiles / "mine.sh").write_text("# mine\n")
        made = made[:-1] + "/"
        (home / made[:-1]).symlink_to(dotfiles)
    elif made.endswith("/"):
        (home / made).mkdir()
        (home / made / "mine.sh").write_text("# mine\n")
    else:
        (home / made).write_text("# mine\n")
    monkeypatch.setenv("WRITE", write)
    repo = campaign_repo(tmp_path, DAG, STARTUP, files={"a/x": "a\n", "b/x": "b\n"})
    result = orch("run", "--jobs", "2", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75 and "seam final-acceptance" in text, text
    assert "changed what no worker may change" not in text
    assert repo.git("show", "campaign/home:b/said") == "refused"
    assert statuses(repo, orch, "home") == {"Culprit": "ACCEPTED", "Innocent": "ACCEPTED"}
    if made.endswith("/"):
        assert sorted(p.name for p in (home / made).iterdir()) == ["mine.sh"]
    else:
        assert (home / made).read_text() == "# mine\n"


# A start-up file, or the global git config, that is /dev/null (`ln -s /dev/null ~/.bash_logout`, CI's
# GIT_CONFIG_GLOBAL=/dev/null): bound read-only, a device is unusable there (bwrap's binds are nodev), and
# every command's `> /dev/null` in every worker and evaluator would fail.
DEVNULL = r"""#!/bin/sh
if echo x > /dev/null; then echo ok; else echo refused; fi > b/said
"""


@pytest.mark.parametrize("how", ["startup-link", "git-config-global"])
def test_a_start_up_file_or_git_config_that_is_dev_null_leaves_dev_null_usable(tmp_path, orch, home, monkeypatch,
                                                                               how):
    if how == "startup-link":
        (home / ".bash_logout").symlink_to("/dev/null")
    else:
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        for who in ("AUTHOR", "COMMITTER"):  # the identity ~/.gitconfig gave
            monkeypatch.setenv(f"GIT_{who}_NAME", "Someone")
            monkeypatch.setenv(f"GIT_{who}_EMAIL", "someone@example.com")
    dag = DAG.replace("  - {id: Innocent, title: i, file_surface: [a/], discipline: sh}\n", "")
    repo = campaign_repo(tmp_path, dag, DEVNULL, files={"b/x": "b\n"})
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "seam final-acceptance" in result.out + result.err, result.out + result.err
    assert repo.git("show", "campaign/home:b/said") == "ok"
