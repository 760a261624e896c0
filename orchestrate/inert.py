"""What keeps orchestrate's own git calls inert: no hook and no repository-configured program runs inside them,
and no setting or replace ref changes what they read.

A worker can write `.git/config`, `.git/hooks/` and `.git/info/attributes` (without the sandbox), and
orchestrate runs git in that repository while workers run, so every call of `orchestrate.git` carries
config overrides (`GIT_CONFIG_COUNT`, which outranks every config file) that switch off what would run a
program: hooks of every kind, fsmonitor, credential helpers, ssh programs, signing and signature-checking
programs, pagers and editors, and each filter, diff and merge driver a config file defines; and trace2, which
would write where a config says. Drivers are found by reading the config
files (no process): their names are what `.gitattributes` or `info/attributes` can point at.
"""
from __future__ import annotations

import os
from pathlib import Path

from orchestrate import git_config

# The built-in diff, spelled as an external one: an empty diff.external is an error, and a planted one
# would run in every `git diff` that prints a patch. It runs git (ours, inert by the inherited variables)
# on the two temporary files git hands over; exit 1 means "they differ", which is not a failure.
TEXT_DIFF = 'f() { git diff --no-ext-diff --no-index -- "$2" "$5"; [ $? -le 1 ]; }; f'
# Values git accepts as "nothing to run" (an empty merge driver is an error, hence the built-in's spelling).
_FIXED = (
    ("diff.external", TEXT_DIFF),
    ("core.hooksPath", "/dev/null"),  # hooks are looked up under this folder: none exist there
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh"),  # a custom ssh for a Dask remote belongs in GIT_SSH_COMMAND
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    # Checking a signature runs a program too: a commit can carry any `gpgsig` header (`hash-object -t commit`),
    # and `merge.verifySignatures` or `log.showSignature` in a config a worker can write (~/.gitconfig is, in the
    # sandbox) would have orchestrate's own merge or log run the program that config names, outside the sandbox
    ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("protocol.ext.allow", "never"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),  # no background gc started by our commits while workers run
    ("maintenance.auto", "false"),
    # A gitlink changed outside the surface is shown (a project's `.gitmodules` `ignore = all` would hide it);
    # what a nested repository's worktree holds is not looked at: git would start a git of its own in it,
    # which reads that repository's config, where a worker may define drivers of any name
    ("diff.ignoreSubmodules", "dirty"),  # and git.NO_SUBMODULE_DIRT where `.gitmodules` could say otherwise
    ("core.splitIndex", "false"),  # an index in one file: the admin dir a worker had is cleared to it
    # git's default: a file one side adds in a folder the other side moved is a conflict (rv77). `true` in your
    # config had merges move it silently, outside the adding node's judged diff: the probe said clean, and MERGE
    # refused the node as if its history brought in other commits
    ("merge.directoryRenames", "conflict"),
)
# The built-in three-way text merge, spelled as a driver: what a path gets when its driver is neutralised.
TEXT_MERGE = "git merge-file --marker-size=%L %A %O %B"
_cache: dict[tuple, tuple[set[tuple[str, str]], tuple]] = {}  # config stamp -> (drivers, included files' stamps)


def env(repo: str | Path) -> dict[str, str]:
    """The `GIT_CONFIG_*` variables that make a git call in `repo` inert."""
    pairs = list(_FIXED)
    for kind, name in sorted(_drivers(Path(repo))):
        if kind == "filter":
            pairs += [(f"filter.{name}.clean", ""), (f"filter.{name}.smudge", ""),
                      (f"filter.{name}.process", ""), (f"filter.{name}.required", "false")]
        elif kind == "diff":  # cat: the identity conversion (an empty textconv fails every patch)
            pairs += [(f"diff.{name}.textconv", "cat"), (f"diff.{name}.command", TEXT_DIFF)]
        else:
            pairs.append((f"merge.{name}.driver", TEXT_MERGE))
    out = {"GIT_PAGER": "cat", "GIT_EDITOR": "true", "GIT_ASKPASS": "",
           "SSH_ASKPASS": "", "GIT_TERMINAL_PROMPT": "0",
           # a ref under refs/replace/ (a worker can create one without the sandbox) swaps one object for
           # another in every read: what orchestrate checks out, diffs and merges is the objects themselves.
           # So does `info/grafts` for a commit's parents, which GIT_NO_REPLACE_OBJECTS leaves on (and with
           # which every `git status` prints a deprecation hint: rv24): a graft file that is never there
           "GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": "/nonexistent/orchestrate-no-grafts",
           # a trace2 target in a config a worker can write would have orchestrate's git append to any file the
           # user can write (the checkout, read-only to workers); the variables outrank every config file, and
           # one the user set for the run is theirs
           **{name: "0" for name in ("GIT_TRACE2", "GIT_TRACE2_EVENT", "GIT_TRACE2_PERF") if name not in os.environ}}
    return {**out, **settings(pairs)}


def settings(pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...], after: int = 0) -> dict[str, str]:
    """`pairs` as git's command-line-strength settings: GIT_CONFIG_COUNT, and a GIT_CONFIG_KEY_n and VALUE_n each,
    numbered from `after` (the settings before it are someone else's)."""
    out = {"GIT_CONFIG_COUNT": str(after + len(pairs))}
    for i, (key, value) in enumerate(pairs, after):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return out


def appended(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """`pairs` set after the GIT_CONFIG_* settings this process inherits, which are kept (a worker's, an agent's:
    the user's own); none when the inherited count is not one git reads (git then refuses every command, as it
    would without orchestrate)."""
    inherited = os.environ.get("GIT_CONFIG_COUNT", "0") or "0"
    return settings(pairs, int(inherited)) if inherited.isdigit() else {}


def filters(repo: str | Path) -> set[str]:
    """The names of the filter drivers the config files git reads for `repo` define."""
    return {name for kind, name in _drivers(Path(repo)) if kind == "filter"}


def config_stamp(repo: Path, files: list[Path] | None = None) -> tuple:
    """The config files git reads for `repo` (or `files`, found already) with their mtimes and sizes: while
    it is equal, so is what they say, but for the files they include (`_drivers` stamps those too)."""
    return tuple((str(f), *_stamp(f)) for f in (_config_files(repo) if files is None else files))


def places_key(repo: Path) -> tuple:
    """Where git looks for `repo`'s config, not what the files say: what a run's identity is kept by. Asked
    once, as the run begins, a worker that edits ~/.gitconfig meanwhile (in the sandbox too) can neither make
    the recorder's commits fail nor sign them with a name of its choosing."""
    return (os.path.realpath(repo), *(os.environ.get(name) for name in (
        "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")))


def _drivers(repo: Path) -> set[tuple[str, str]]:
    files = _config_files(repo)
    key = config_stamp(repo, files)
    # A file the config includes (`include.path = ~/.gitconfig.local`) may be where a driver is planted
    # ($HOME is writable in the sandbox): a cached reading stands only while every file it read is unchanged.
    cached = _cache.get(key)
    if cached is None or any(_stamp(Path(name)) != tuple(stamp) for name, *stamp in cached[1]):
        seen: set[Path] = set()
        found = {(e.section, e.subsection) for f in files for e in git_config.read(f, seen)
                 if e.section in ("filter", "diff", "merge") and e.subsection is not None}
        if len(_cache) > 64:
            _cache.clear()
        cached = _cache[key] = (found, tuple((str(f), *_stamp(f)) for f in seen - set(files)))
    return cached[0]


# Every hook git may run: where a config's core.hooksPath points, each is watched (workers/fingerprint.py).
HOOK_NAMES = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
              "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
              "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
              "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
              "fsmonitor-watchman", "post-index-change", "p4-changelist", "p4-prepare-changelist",
              "p4-post-changelist", "p4-pre-submit")
_NAMED = ("hookspath", "excludesfile", "attributesfile")


def referenced(files: list[Path], top: Path | None = None) -> list[Path]:
    """What else the config `files` make git read or run: the files they include, the files their
    core.excludesFile and core.attributesFile name, and each hook under their core.hooksPath. Those three,
    when relative, are relative to where git runs, the checkout's `top` (husky's `.husky/_`); an include is
    relative to the file that includes it."""
    seen: set[Path] = set()
    out: list[Path] = []
    for f in files:
        for e in git_config.read(f, seen):
            if e.section == "core" and e.key in _NAMED and e.value:
                named = git_config.resolved(e.value, f if top is None else top / e.key)  # beside it: in top
                out += [named / hook for hook in HOOK_NAMES] if e.key == "hookspath" else [named]
    return list(dict.fromkeys([*sorted(seen - set(files)), *out]))


def _stamp(path: Path) -> tuple[int, ...]:
    # the ctime and inode too: a worker can write a file at the same size and put its mtime back, not those
    try:
        st = path.stat()
    except OSError:
        return (0, -1, 0, 0)
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def _config_files(repo: Path) -> list[Path]:
    """The config files git would read for `repo`: system, global, the common dir's and the worktree's."""
    home = Path(os.environ.get("HOME", "~")).expanduser()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
             Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"), xdg / "git" / "config"]
    gitdir = _gitdir(repo)
    if gitdir is not None:
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        files += [common / "config", gitdir / "config.worktree"]
    return files


def _gitdir(repo: Path) -> Path | None:
    for top in (repo, *repo.parents):
        dot = top / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir: "):
                target = Path(text[len("gitdir: "):])
                return target if target.is_absolute() else (top / target).resolve()
            return None
        if (top / "HEAD").is_file() and (top / "objects").is_dir():  # a bare repository (a Dask remote)
            return top
    return None
