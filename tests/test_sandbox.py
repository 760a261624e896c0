"""The bubblewrap sandbox (DESIGN §14.2) with real bwrap and real worker scripts: what a worker can
write, what it can see, that nothing it started outlives it, and that git still commits in a worktree
whose shared .git is read-only."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from orchestrate import proc
from orchestrate.errors import ExitCode, UsageError
from orchestrate.workers import sandbox
from tests.helpers import make_repo

REASON = sandbox.probe()
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bubblewrap does not work here: {REASON}")


@pytest.fixture
def fresh_probe():
    sandbox.reset()
    yield
    sandbox.reset()


def run(script: str, *, cwd: Path, writable, readable=(), env=None, env_keep=None) -> proc.Completed:
    argv = sandbox.wrap(["sh", "-c", script], cwd=cwd, writable=writable, readable=readable, env_keep=env_keep)
    return proc.run(argv, cwd=cwd, env=env, timeout=60)


def lines(done: proc.Completed) -> list[str]:
    return done.stdout.split()


@needs_bwrap
def test_a_worker_writes_its_own_dir_and_tmp_and_nothing_else(tmp_path):
    work, sibling, ro = tmp_path / "work", tmp_path / "sibling", tmp_path / "ro"
    for d in (work, sibling, ro):
        d.mkdir()
    (ro / "kept.txt").write_text("original\n")
    outside = Path("/var/tmp") / f"orch-sandbox-{uuid.uuid4().hex}"
    script = f"""
        try() {{ if ( eval "$2" ) 2>/dev/null; then echo "wrote:$1"; else echo "refused:$1"; fi; }}
        try own 'echo x > "{work}/own.txt"'
        try tmp 'echo x > /tmp/scratch.txt'
        try next 'echo x > "{tmp_path}/next.txt"'
        try sibling 'echo x > "{sibling}/s.txt"'
        try ro-file 'echo changed > "{ro}/kept.txt"'
        try ro-new 'echo x > "{ro}/new.txt"'
        try outside 'echo x > "{outside}"'
    """
    try:
        done = run(script, cwd=work, writable=[work], readable=[tmp_path])
    finally:
        outside.unlink(missing_ok=True)
    assert done.rc == 0, done.stderr
    assert lines(done) == ["wrote:own", "wrote:tmp", "refused:next", "refused:sibling", "refused:ro-file",
                           "refused:ro-new", "refused:outside"]
    assert (work / "own.txt").read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ro", "sibling", "work"]
    assert list(sibling.iterdir()) == [] and (ro / "kept.txt").read_text() == "original\n"
    assert sorted(p.name for p in ro.iterdir()) == ["kept.txt"]


@needs_bwrap
def test_the_folders_between_a_writable_home_and_the_project_in_it_cannot_be_moved(tmp_path):
    """The project in $HOME, $HOME writable: a worker that renamed $HOME/src and put a copy of the project in its
    place would have the runner, outside, take the copy for the project (its settings, its checkout)."""
    home = tmp_path / "home"
    project = home / "src" / "deep" / "repo"
    project.mkdir(parents=True)
    (project / "config.yaml").write_text("sandbox: bwrap\n")
    script = f"""
        try() {{ if ( eval "$2" ) 2>/dev/null; then echo "did:$1"; else echo "refused:$1"; fi; }}
        try cache 'echo x > "{home}/cache.txt"'
        try beside 'echo x > "{home}/src/notes.txt"'
        try move-src 'mv "{home}/src" "{home}/src.orig"'
        try move-deep 'mv "{home}/src/deep" "{home}/src/deep.orig"'
        try move-project 'mv "{project}" "{project}.orig"'
        try edit 'echo "sandbox: none" > "{project}/config.yaml"'
    """
    done = run(script, cwd=home, writable=[home], readable=[project])
    assert done.rc == 0, done.stderr
    assert lines(done) == ["did:cache", "did:beside", "refused:move-src", "refused:move-deep", "refused:move-project",
                           "refused:edit"]
    assert (project / "config.yaml").read_text() == "sandbox: bwrap\n"
    # a writable folder inside another (`writable: [~, ~/src/deep]`): the folders above the inner one count too
    done = run(script, cwd=home, writable=[home, home / "src" / "deep"], readable=[project])
    assert lines(done)[2:] == ["refused:move-src", "refused:move-deep", "refused:move-project", "refused:edit"]
    assert (project / "config.yaml").read_text() == "sandbox: bwrap\n"


@needs_bwrap
def test_tools_on_path_and_the_python_under_tmp_stay_usable(tmp_path, monkeypatch):
    """A CI clone may keep its virtualenv under /tmp, a user a tool folder: the private /tmp must not hide
    what a worker needs to start (the presets and the replay stand-in run orchestrate's own Python)."""
    import sys
    tools = tmp_path / "tools"  # tmp_path is under /tmp, which the sandbox replaces
    tools.mkdir()
    (tools / "orch-probe-tool").write_text("#!/bin/sh\necho tool-ran\n")
    (tools / "orch-probe-tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    done = run("orch-probe-tool; test -e /tmp/other && echo leaked || echo private", cwd=work, writable=[work],
               env=dict(os.environ))
    assert lines(done) == ["tool-ran", "private"], done.stdout + done.stderr
    venv = tmp_path / "venv" / "bin"  # stands for sys.prefix under /tmp, as in a clone at /tmp/ciclone
    venv.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(venv.parent))
    argv = sandbox.wrap(["true"], cwd=work, writable=[work])
    at = argv.index(str(venv.parent))
    assert argv[at - 1:at + 2] == ["--ro-bind", str(venv.parent), str(venv.parent)]  # visible, read-only


@needs_bwrap
def test_what_the_runner_runs_or_imports_under_a_writable_home_stays_read_only(monkeypatch):
    """rv37: `$HOME` is writable in the sandbox, and a folder on PATH there (`~/.local/bin`), a virtualenv or a
    site-packages the runner imports from (pipx, `pip --user`) were too: a worker that rewrote `~/.local/bin/git`
    had the runner's next git run it outside the sandbox. Outside /tmp, whose folders were read-only already."""
    import shutil
    import sys
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="orch-sandbox-home-"))
    try:
        tools, site = home / ".local" / "bin", home / ".local" / "lib" / "site-packages"
        tools.mkdir(parents=True)
        site.mkdir(parents=True)
        (tools / "orch-probe-tool").write_text("#!/bin/sh\necho tool-ran\n")
        (tools / "orch-probe-tool").chmod(0o755)
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
        work = home / "work"
        work.mkdir()
        done = run(f'orch-probe-tool; echo x > "{tools}/git" || echo refused; echo x > "{site}/evil.py" || echo refused;'
                   f' echo mine > "{home}/notes" && echo wrote', cwd=work, writable=[home], env=dict(os.environ))
        assert lines(done)[:1] == ["tool-ran"] and lines(done).count("refused") == 2 and "wrote" in lines(done), \
            done.stdout + done.stderr
        assert not (tools / "git").exists() and not (site / "evil.py").exists()
    finally:
        shutil.rmtree(home)


def test_a_program_started_by_name_is_the_one_found_first_not_one_made_later(tmp_path, monkeypatch):
    """rv37: a folder ahead on PATH that a worker creates (`~/.local/bin`) would have had the runner start the
    worker's `git` from then on."""
    ahead = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{ahead}{os.pathsep}{os.environ['PATH']}")
    assert proc.run(["git", "--version"]).stdout.startswith("git version")
    ahead.mkdir()
    (ahead / "git").write_text("#!/bin/sh\necho planted\n")
    (ahead / "git").chmod(0o755)
    assert proc.run(["git", "--version"]).stdout.startswith("git version")


@needs_bwrap
def test_the_hosts_tmp_is_hidden_and_the_private_one_stays_private(tmp_path):
    host_file = Path("/tmp") / f"orch-sandbox-host-{uuid.uuid4().hex}"
    private = Path("/tmp") / f"orch-sandbox-private-{uuid.uuid4().hex}"
    host_file.write_text("secret\n")
    try:
        done = run(f'test -e "{host_file}" && echo seen || echo hidden; echo mine > "{private}" && cat "{private}"',
                   cwd=tmp_path, writable=[tmp_path])
        assert not private.exists()
    finally:
        host_file.unlink()
        private.unlink(missing_ok=True)
    assert lines(done) == ["hidden", "mine"]


@needs_bwrap
def test_a_writable_path_under_tmp_works():
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="orch-sandbox-"))
    try:
        work = base / "deep" / "work"
        done = run("echo landed > out.txt && pwd", cwd=work, writable=[work])
        assert done.rc == 0, done.stderr
        assert done.stdout.strip() == str(work.resolve())
        assert (work / "out.txt").read_text() == "landed\n"
    finally:
        shutil.rmtree(base)


@needs_bwrap
def test_exit_codes_and_output_pass_through(tmp_path):
    done = run("echo to-out; echo to-err >&2; exit 7", cwd=tmp_path, writable=[tmp_path])
    assert (done.rc, done.stdout, done.stderr) == (7, "to-out\n", "to-err\n")
    assert run("true", cwd=tmp_path, writable=[tmp_path]).rc == 0
    assert run("kill -TERM $$", cwd=tmp_path, writable=[tmp_path]).rc == 128 + 15


@needs_bwrap
def test_env_keep_passes_only_the_named_variables(tmp_path):
    done = run('printf "%s|%s|%s\\n" "$KEEP" "${DROP-unset}" "${ALSO-unset}"', cwd=tmp_path, writable=[tmp_path],
               env={"KEEP": "a b * $HOME", "DROP": "x"}, env_keep=["KEEP", "ALSO"])
    assert done.stdout == "a b * $HOME|unset|unset\n", done.stderr
    with pytest.raises(UsageError, match="not an environment variable name"):
        sandbox.wrap(["true"], cwd=tmp_path, writable=[], env_keep=["A;rm"])


# Children that leave the worker's session and process group: a setsid one and a double-forked one.
# Each records its pid inside the sandbox and its PID namespace, then waits for the go file.
STRAYS = """
setsid sh -c 'echo "$$ $(readlink /proc/$$/ns/pid)" > setsid.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &
( sh -c 'echo "$$ $(readlink /proc/$$/ns/pid)" > double.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & )
i=0
until [ -e go ]; do i=$((i + 1)); [ $i -gt 1200 ] && exit 9; sleep 0.05; done
echo returned
"""


def host_pid(ns: str, inner: int) -> int | None:
    """The host's pid of the process that is `inner` in PID namespace `ns`, if it is alive."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != ns:
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                return int(entry.name)
    return None


def poll(condition, bound: float = 10.0) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def start_strays(work: Path) -> tuple[subprocess.Popen, list[tuple[str, int]]]:
    log = open(work.parent / "worker.log", "wb")
    worker = proc.spawn(sandbox.wrap(["sh", "-c", STRAYS], cwd=work, writable=[work]), cwd=work, env={}, log=log)
    log.close()
    files = [work / "setsid.pid", work / "double.pid"]
    assert poll(lambda: all(f.exists() and f.read_text().endswith("\n") for f in files)), "the children never started"
    found = []
    for f in files:
        inner, ns = f.read_text().split()
        found.append((ns, int(inner)))
    hosts = [host_pid(ns, inner) for ns, inner in found]
    assert all(hosts), f"the children are not visible from the host: {found}"
    for pid in hosts:
        os.kill(pid, 0)  # alive now, so "gone" below means something
    return worker, found


@needs_bwrap
def test_nothing_a_worker_started_outlives_its_command(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    worker, strays = start_strays(work)
    (work / "go").write_text("")
    assert worker.wait(timeout=60) == 0
    assert (tmp_path / "worker.log").read_text() == "returned\n"
    assert poll(lambda: all(host_pid(ns, inner) is None for ns, inner in strays)), "a child outlived the worker"


@needs_bwrap
def test_killing_the_sandbox_as_a_timeout_does_ends_everything_in_it(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    worker, strays = start_strays(work)
    proc.kill_group(worker.pid)
    worker.wait(timeout=60)
    assert poll(lambda: all(host_pid(ns, inner) is None for ns, inner in strays)), "a child outlived the kill"


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_bwrap
def test_git_commits_in_a_worktree_while_the_shared_git_dir_stays_read_only(tmp_path):
    repo = make_repo(tmp_path / "repo", {"file.txt": "base\n"})
    base = repo.head()
    wt, objects = tmp_path / "wt", tmp_path / "objects"
    repo.git("worktree", "add", "-q", "--detach", str(wt), base)
    objects.mkdir()
    main_git = repo / ".git"
    admin = Path(subprocess.run(["git", "-C", str(wt), "rev-parse", "--absolute-git-dir"], capture_output=True,
                                text=True, check=True).stdout.strip())
    before = {name: tree(main_git / name) for name in ("objects", "hooks", "refs")}
    config = (main_git / "config").read_bytes()
    env = {"GIT_OBJECT_DIRECTORY": str(objects), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(main_git / "objects")}
    script = f"""
        echo changed > file.txt && git add file.txt && git commit -q -m "in the sandbox" && echo committed
        git config core.hooksPath /nowhere 2>/dev/null && echo config-set
        echo x >> "{main_git}/config" 2>/dev/null && echo config-appended
        echo 'exit 0' > "{main_git}/hooks/pre-commit" 2>/dev/null && echo hook-planted
        git update-ref refs/heads/main HEAD 2>/dev/null && echo ref-moved
        true
    """
    done = run(script, cwd=wt, writable=[wt, admin, objects], readable=[repo, os.environ["HOME"]], env=env)
    assert lines(done) == ["committed"], done.stdout + done.stderr
    head = repo.git("-C", str(wt), "rev-parse", "HEAD")
    assert head != base
    shown = subprocess.run(["git", "-C", str(wt), "cat-file", "-p", head], capture_output=True, text=True, check=True,
                           env={**os.environ, **env}).stdout
    assert f"parent {base}" in shown and "in the sandbox" in shown
    assert {name: tree(main_git / name) for name in ("objects", "hooks", "refs")} == before
    assert (main_git / "config").read_bytes() == config and repo.head() == base
    assert any(objects.rglob("*")), "the commit's objects went to the private object directory"


@needs_bwrap
def test_probe_finds_the_working_bwrap_and_auto_and_bwrap_use_it(fresh_probe):
    warned = []
    assert sandbox.probe() is None
    assert sandbox.resolve("auto", warned.append) and sandbox.resolve("bwrap", warned.append)
    assert sandbox.resolve(None, warned.append)
    assert warned == []


def test_none_never_sandboxes_and_an_unknown_value_is_a_usage_error(fresh_probe, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap at all: `none` must not care
    assert sandbox.resolve("none", pytest.fail) is False
    with pytest.raises(UsageError, match="unknown value 'sometimes'") as err:
        sandbox.resolve("sometimes", pytest.fail)
    assert err.value.exit_code == ExitCode.USAGE


def test_without_bwrap_auto_warns_once_and_bwrap_is_an_error(fresh_probe, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = sandbox.probe()
    assert reason == "bubblewrap is not installed (no `bwrap` on PATH)"
    warned = []
    assert sandbox.resolve("auto", warned.append) is False
    assert sandbox.resolve("auto", warned.append) is False
    assert warned == [reason]
    with pytest.raises(sandbox.SandboxUnavailable) as err:
        sandbox.resolve("bwrap", warned.append)
    assert err.value.exit_code == ExitCode.USAGE and "\n" not in str(err.value)
    assert reason in str(err.value) and "sandbox: auto or none" in str(err.value)


def test_a_failing_bwrap_is_reported_with_its_own_words_once_per_process(fresh_probe, tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho >> \"$0.calls\"\n"
                    "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = sandbox.probe()
    assert reason.endswith("bwrap: No permissions to create new namespace") and "\n" not in reason
    calls = (tmp_path / "bwrap.calls").read_text().count("\n")
    assert calls == 2  # the tightest options, then the ones an older bwrap knows
    monkeypatch.setenv("PATH", os.defpath)
    assert sandbox.probe() == reason  # cached: not asked again
    assert (tmp_path / "bwrap.calls").read_text().count("\n") == calls


def test_user_namespaces_switched_off_are_named(tmp_path):
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "max_user_namespaces").write_text("0\n")
    assert sandbox.userns_off(tmp_path) == "user.max_user_namespaces = 0"
    (tmp_path / "user" / "max_user_namespaces").write_text("15000\n")
    assert sandbox.userns_off(tmp_path) is None


@needs_bwrap
def test_the_hosts_run_is_hidden_its_sockets_with_it(tmp_path, monkeypatch):
    """/run holds sockets that run commands outside the sandbox for whoever connects (the user's D-Bus and
    systemd, docker's, a tmux server: rv81), and a read-only mount does not stop a connect: the sandbox has an
    empty /run of its own, with an empty private $XDG_RUNTIME_DIR, and the resolver's configuration still reads."""
    import socket
    if not os.access("/run", os.W_OK):
        pytest.skip("a socket in /run needs write access to it (root)")
    path = Path("/run") / f"orch-sandbox-{uuid.uuid4().hex[:12]}.sock"
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(path))
    listening.listen(1)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    try:
        done = run(f'test -e "{path}" && echo seen || echo hidden; ls -A /run/user/4242 | wc -l; '
                   'touch /run/user/4242/mine && echo writable; '
                   'test ! -e /etc/resolv.conf || cat /etc/resolv.conf > /dev/null && echo resolver',
                   cwd=tmp_path, writable=[tmp_path])
    finally:
        listening.close()
        path.unlink()
    assert lines(done) == ["hidden", "0", "writable", "resolver"], done.stderr
    assert not Path("/run/user/4242/mine").exists()


@needs_bwrap
def test_a_socket_folder_in_run_named_writable_is_there(tmp_path):
    """What README says to do for a socket a worker needs (a local database's): name its folder writable."""
    import socket
    if not os.access("/run", os.W_OK):
        pytest.skip("a socket in /run needs write access to it (root)")
    folder = Path("/run") / f"orch-sandbox-{uuid.uuid4().hex[:12]}"
    folder.mkdir()
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(folder / "db.sock"))
    listening.listen(1)
    try:
        done = run(f'test -S "{folder}/db.sock" && echo there', cwd=tmp_path, writable=[tmp_path, folder])
    finally:
        listening.close()
        shutil.rmtree(folder)
    assert lines(done) == ["there"], done.stderr


@needs_bwrap
def test_a_folder_on_path_that_lies_in_run_through_a_link_stays_there(tmp_path, monkeypatch):
    """NixOS puts /run/current-system/sw/bin (a link into /nix/store) on PATH: hiding /run hid every tool."""
    if not os.access("/run", os.W_OK):
        pytest.skip("a link in /run needs write access to it (root)")
    system = tmp_path / "store" / "system"
    (system / "sw" / "bin").mkdir(parents=True)
    (system / "sw" / "bin" / "orch-tool").write_text("#!/bin/sh\necho found\n")
    (system / "sw" / "bin" / "orch-tool").chmod(0o755)
    link = Path("/run") / f"orch-system-{uuid.uuid4().hex[:12]}"
    link.symlink_to(system)
    monkeypatch.setenv("PATH", f"{link}/sw/bin:{os.environ['PATH']}")
    try:
        done = run("orch-tool", cwd=tmp_path, writable=[tmp_path / "work"], env=dict(os.environ))
    finally:
        link.unlink()
    assert lines(done) == ["found"], done.stderr
