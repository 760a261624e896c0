"""The bubblewrap sandbox a worker runs in (DESIGN §14.2): the whole file system read-only, only the
paths it is given writable, a private /tmp, and a PID namespace so nothing it started outlives it.

`probe()` says whether bubblewrap works here, `wrap()` builds the command line, `resolve()` turns the
`sandbox: auto|bwrap|none` setting into a yes or no.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Sequence

from orchestrate import git, proc
from orchestrate.errors import ProcError, UsageError

MODES = ("auto", "bwrap", "none")
BY_NAME = (git.PROGRAM, "bwrap", "bash")  # what the runner starts by name: their folders stay read-only here
PROBE_TIMEOUT = 30.0  # a first bwrap on a cold, loaded machine; a working one takes milliseconds

# What §14.2 asks for: the worker's processes die with its command (PID namespace) and with the runner
# (--die-with-parent); --new-session keeps it from pushing keystrokes into the runner's terminal.
_CORE = ("--unshare-pid", "--die-with-parent", "--new-session")
# Tighter, and no ordinary tool misses what they take away. Run as root, bwrap keeps every capability
# unless told otherwise, and CAP_SYS_ADMIN can simply remount / read-write: drop them all. Private
# System V IPC, host name and cgroup view cost nothing.
_HARDENING = ("--cap-drop", "ALL", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
# A user namespace of its own lets bwrap forbid nested ones, so the worker cannot build a new mount
# namespace to rearrange what it sees. --disable-userns is bwrap >= 0.8; older ones run the tier below.
_NO_NESTED_USERNS = ("--unshare-user", "--disable-userns")
_TIERS = (_CORE + _HARDENING + _NO_NESTED_USERNS, _CORE + _HARDENING)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Runs inside the sandbox: start the command with only the kept variables (names are checked above,
# values stay quoted, so nothing is split or globbed).
_ENV_FILTER = 'exec env -i {pairs} "$@"'


class SandboxUnavailable(UsageError):
    """`sandbox: bwrap` was asked for and bubblewrap does not work on this machine."""


_lock = threading.Lock()
_probed: tuple[tuple[str, ...], str | None] | None = None  # (options, reason), once per process
_warned = False


def probe() -> str | None:
    """None when bubblewrap works here, else one line saying why not. Runs bwrap at most once per process."""
    return _probe()[1]


def reset() -> None:
    """Forget the probe and the warning, so the next call looks again (after installing bubblewrap)."""
    global _probed, _warned
    with _lock:
        _probed, _warned = None, False


def resolve(setting: str | None, warn: Callable[[str], None]) -> bool:
    """Whether to sandbox workers under `setting` (None means `auto`).

    `bwrap` without a working bubblewrap is an error; `auto` without one runs unsandboxed and calls
    `warn(reason)` once per process.
    """
    global _warned
    mode = setting or "auto"
    if mode not in MODES:
        raise UsageError(f"sandbox: unknown value {mode!r}", hint="use one of auto, bwrap, none")
    if mode == "none":
        return False
    reason = probe()
    if reason is None:
        return True
    if mode == "bwrap":
        raise SandboxUnavailable(f"sandbox: bwrap is required but bubblewrap does not work here: {reason}",
                                 hint="fix that, or set sandbox: auto or none")
    with _lock:
        first, _warned = not _warned, True
    if first:
        warn(reason)
    return False


def wrap(argv: Sequence[str], *, cwd: str | Path, writable: Iterable[str | Path],
         readable: Iterable[str | Path] = (), env_keep: Iterable[str] | None = None) -> list[str]:
    """The command line that runs `argv` in a sandbox.

    Everything is read-only, /tmp is private and empty, each `writable` path is writable at its own
    path (created when missing), each `readable` one read-only: that is how a path under /tmp (a
    repository, a HOME) stays visible, or how part of a writable tree stays read-only; the deeper
    path wins. With `env_keep`, the command sees only the variables named there.
    """
    out = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *_runtime()]
    writable = [Path(w).resolve() for w in writable]
    for path, rw in _binds(writable, [*readable, *_tools(writable), *_kept_from_run()]):
        out += ["--bind" if rw else "--ro-bind", path, path]
    out += ["--chdir", str(Path(cwd).resolve()), *_options()]
    if env_keep is not None:
        out += ["--", "/bin/sh", "-c", _ENV_FILTER.format(pairs=_pairs(env_keep)), "sh"]
    else:
        out.append("--")
    return out + [str(a) for a in argv]


# Hidden behind empty private folders, as /tmp is: /run holds the sockets that would run a command outside the
# sandbox for whoever connects (a read-only mount does not stop a connect): the user's D-Bus and systemd
# (`systemd-run --user`), the system bus, docker's and podman's, agents (ssh, gpg), a tmux server (rv81).
HIDDEN = ("/tmp", "/run")


def _runtime() -> list[str]:
    """An empty /run of its own, with an empty $XDG_RUNTIME_DIR in it where the user has one there (tools that
    keep sockets or locks there make their own, which go with the sandbox), and the folders on PATH that lie
    there through a link (NixOS: /run/current-system/sw/bin), shown read-only where PATH names them. (No
    `--perms`: bubblewrap before 0.5, still shipped, has none; this /run is the sandbox's alone anyway.)"""
    if not os.path.isdir("/run") or os.path.islink("/run"):
        return []
    out = ["--tmpfs", "/run"]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/run/") and os.path.isabs(runtime):
        out += ["--dir", runtime]
    for folder in dict.fromkeys(os.environ.get("PATH", "").split(os.pathsep)):
        real = os.path.realpath(folder) if folder.startswith("/run/") else ""
        if real and not Path(real).is_relative_to("/run") and os.path.isdir(real):
            out += ["--ro-bind", real, folder]
    return out


def _kept_from_run() -> list[str]:
    """What the host's /run holds that a worker needs, bound where it is: the resolver's configuration where
    /etc/resolv.conf leads there (systemd-resolved, resolvconf, NetworkManager; a regular file, never a
    socket). Folders on PATH there (NixOS's /run/wrappers/bin) are `_tools`'."""
    real = os.path.realpath("/etc/resolv.conf")
    return [real] if Path(real).is_relative_to("/run") and os.path.isfile(real) else []


def _tools(writable: list[Path]) -> list[str]:
    """What the runner runs or imports, where the sandbox would leave it writable or hide it: the Python that runs
    orchestrate, every folder it imports from (its `sys.path`: a virtualenv, the user site-packages, an editable
    checkout), the folders on PATH and the real folders of the programs the runner starts by name, when one is
    under a writable path (`$HOME`: pipx's venvs, `~/.local/bin`) or under /tmp (a CI clone's; the private /tmp
    would hide it, and the presets and the replay stand-in run `python -m orchestrate...`). Read-only there: a
    worker that rewrote `~/.local/bin/git` or a module orchestrate imports later would have the runner run its
    code outside the sandbox (rv37)."""
    import sys

    import orchestrate
    source = os.path.dirname(os.path.dirname(os.path.realpath(orchestrate.__file__)))  # an editable install's
    programs = [proc.program(name) for name in BY_NAME]  # what the runner starts: found once a run
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  source, *sys.path, *os.environ.get("PATH", "").split(os.pathsep),
                  *(os.path.dirname(os.path.realpath(p)) for p in programs if "/" in p)}
    found: list[Path] = []
    for real in sorted({Path(p).resolve() for p in candidates if p}, key=lambda p: len(p.parts)):
        # (os.path.isdir: False, not an error, where a folder on the way cannot be searched: another user's)
        if not os.path.isdir(real) or str(real) in HIDDEN or real in writable or \
                any(real.is_relative_to(f) for f in found):
            continue  # (one inside a folder bound read-only already is read-only: no bind of its own)
        if any(real.is_relative_to(h) for h in HIDDEN) or any(real.is_relative_to(w) for w in writable):
            found.append(real)
    return sorted(str(p) for p in found)


def _binds(writable: Iterable[str | Path], readable: Iterable[str | Path]) -> list[tuple[str, bool]]:
    """Paths to bind, parents before children so a deeper bind is not hidden by a shallower one.

    A read-only path inside a writable one (the project in $HOME) is a mount point, which cannot be renamed;
    the folders between the two are not, and a worker could rename one ($HOME/src) and put a copy of the
    project in its place, which the runner, outside, would then take for the project (its settings, its
    checkout). Each such folder is bound onto itself, writable as it was: a mount point too."""
    chosen: dict[Path, bool] = {}
    for path in readable:
        chosen.setdefault(Path(path).resolve(), False)
    for path in writable:
        target = Path(path).resolve()
        target.mkdir(parents=True, exist_ok=True)  # a configured cache may not exist yet
        chosen[target] = True
    pinned: list[Path] = []
    for kept in [p for p, rw in chosen.items() if not rw]:
        between = []
        for folder in kept.parents:  # nearest first: a folder holding a mount point can still be renamed, so
            if folder not in chosen:  # up through every writable bind, to a read-only one (or /, read-only)
                between.append(folder)
            elif chosen[folder]:
                pinned += between
                between = []
            else:
                break
    for folder in pinned:
        chosen.setdefault(folder, True)
    return [(str(p), rw) for p, rw in sorted(chosen.items(), key=lambda item: (len(item[0].parts), item[0]))]


def _pairs(names: Iterable[str]) -> str:
    pairs = []
    for name in names:
        if not _ENV_NAME.match(name):
            raise UsageError(f"sandbox: {name!r} is not an environment variable name",
                             hint="use letters, digits and underscores")
        pairs.append(f'${{{name}+"{name}=${name}"}}')
    return " ".join(pairs)


def _options() -> tuple[str, ...]:
    return _probe()[0]


def _probe() -> tuple[tuple[str, ...], str | None]:
    global _probed
    with _lock:
        if _probed is None:
            _probed = _look()
        return _probed


def _look() -> tuple[tuple[str, ...], str | None]:
    """Run `true` under each tier of options, tightest first; the first that works is the one used."""
    if shutil.which("bwrap") is None:
        return _TIERS[0], "bubblewrap is not installed (no `bwrap` on PATH)"
    scratch = Path(tempfile.mkdtemp(prefix="orchestrate-probe-"))
    reason = ""
    try:
        for options in _TIERS:
            argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                    "--bind", str(scratch), str(scratch), "--chdir", str(scratch), *options, "--", "true"]
            try:
                done = proc.run(argv, cwd=scratch, timeout=PROBE_TIMEOUT, confined=True)
            except ProcError as exc:
                return _TIERS[0], f"bwrap cannot start: {exc.message}"
            if done:
                return options, None
            said = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            reason = said[-1] if said else ("timed out" if done.timed_out else f"exited {done.rc}")
    finally:
        scratch.rmdir()
    off = userns_off()
    return _TIERS[0], f"user namespaces are off ({off}): {reason}" if off else f"bwrap failed: {reason}"


def userns_off(proc_sys: Path = Path("/proc/sys")) -> str | None:
    """The kernel setting that forbids unprivileged user namespaces, if one does."""
    for rel, off in (("user/max_user_namespaces", "0"), ("kernel/unprivileged_userns_clone", "0"),
                     ("kernel/apparmor_restrict_unprivileged_userns", "1")):
        try:
            value = (proc_sys / rel).read_text().strip()
        except OSError:
            continue
        if value == off:
            return f"{rel.replace('/', '.')} = {value}"
    return None
