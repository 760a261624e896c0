"""What a worker must leave alone, fingerprinted before workers run and compared when one returns.

Without the sandbox a worker can write anywhere the user can. Around every worker the engine takes a
fingerprint of the shared git dir (config, hooks/, info/, objects/info/alternates, and every ref but the
campaigns' node and campaign branches: its runner moves a campaign's own while workers run, and checks them
otherwise), of the user's git config, attributes and excludes in $HOME (writable in the sandbox) and what
that config and the repository's name (workers/git_named.py), of the files in $HOME that run code later
(shell and ssh start-up files, Python's user-site hooks: workers/startup_files.py), of the
recorder files the engine reads back (config.yaml, the default DAG, the campaign's DAG copy; the journal
is the recorder's to verify) and of the user's checkout (HEAD, branch, index, status, linked files). A difference is
attributed to the nodes that were running; planted config, hooks and attributes (in .git or $HOME) and
edited recorder files are put back byte for byte, so nothing a worker planted survives in the user's `.git` or reaches
the recorder's history (the edited version is kept aside, named in the message). A change in the
checkout is only reported: the user may be working there.
"""
from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from orchestrate import git, proc
from orchestrate.workers import git_modules, git_named, startup_files, watched
from orchestrate.workers.git_named import LED
from orchestrate.workers.watched import content

# read whole, restored whole; alternates: objects a worker keeps elsewhere would be read as the repository's
# commondir (and gitdir) in the shared git dir would send every git there, yours too, to another git dir (rv37)
_WATCHED_FILES = ("config", "config.worktree", "packed-refs.orig", "objects/info/alternates", "commondir", "gitdir",
                  "shallow")
_WATCHED_DIRS = ("hooks", "info")
_DERIVED = ("info/refs", "info/packs")  # what `git gc` and `repack` write for dumb http: run nothing, left out


@dataclass
class Fingerprint:
    common: Path
    files: dict[str, bytes | None] = field(default_factory=dict)  # relative path -> content (None: absent)
    refs: dict[str, str] = field(default_factory=dict)
    checkout: dict[str, str] = field(default_factory=dict)
    recorder: dict[Path, bytes | None] = field(default_factory=dict)  # recorder file -> content
    # the user's own git config in $HOME, which the sandbox leaves writable: a hook path or an fsmonitor
    # planted there runs in the user's next git command, outside any sandbox
    home: dict[Path, bytes | None] = field(default_factory=dict)
    # the folders between $HOME and those files, each a link (`link:` its target), something else in a
    # folder's place, or None (a folder, or nothing): a worker that swaps one for a link would have the
    # put-back write through it (`_folder`)
    folders: dict[Path, str | None] = field(default_factory=dict)
    # the recorder's own git dir (config, hooks/, info/): orchestrate's git calls there are inert, but a
    # person's (the restore a ForeignWrite hint names) would run what a worker planted
    recorder_git: Path | None = None
    recorder_git_files: dict[str, bytes | None] = field(default_factory=dict)
    # the real path of each recorder and $HOME file's folder: put back only there, never where a folder on the
    # way was re-pointed to since (watched.put)
    places: dict[Path, str] = field(default_factory=dict)  # and of the git dirs watched
    inside: tuple[str, ...] = ()  # real paths a link may lead into uncompared (take)
    named: tuple[str, ...] = ()  # files in the checkout your repository's config names (git_named.split)
    looked: float = 0.0  # when the checkout was looked at (time.monotonic())
    modules: dict[str, dict[str, bytes | None]] = field(default_factory=dict)  # git_modules.take
    odd: tuple[Path, ...] = ()  # startup_files.odd
    mark: int = -1  # proc.unconfined() when it was looked at: what started outside the sandbox since


# How old a look at the user's checkout may be and still stand for a new one when the watch is armed with
# no worker running (a `git status` of the whole checkout: 20-40 ms on 20,000 files); an older one is
# dropped then, and the next process that could write the checkout has a new one taken first. A change
# the user makes in that window is reported at the next check, as the warning says it may be: their own.
STANDS_FOR = 1.0


def take(root: Path, own_refs: set[str], *, recorder_files: list[Path] = (), recorder_git: Path | None = None,
         other_topics: list[str] = (), seen: Fingerprint | None = None, look: bool = True) -> Fingerprint:
    """`own_refs`: the refs the running workers may move (their own node branches); `other_topics`: the
    campaigns whose node and campaign branches are not watched here (their runners move them); `seen`: a
    fingerprint whose look at the checkout (the costly part: a `git status`) stands for a new one; `look`
    false: no look is taken (the checkout stays `{}`) when no worker that could write it runs."""
    common = git.git_common_dir(root)
    # what a link of yours may lead into without what it leads to being put back: your checkout (a hook linked to
    # scripts/ you edit), its git dir, the recorder (rv26, rv28); compared with the look at the checkout instead
    inside = tuple(dict.fromkeys(os.path.realpath(p) for p in (root, common, *([recorder_git.parent]
                                                                             if recorder_git else []))))
    fp = Fingerprint(common, files=take_files(common, inside), inside=inside, modules=git_modules.take(common, inside))
    # before the look, which reads what their links lead to; `home` holds what the repository's config names
    # outside the checkout too (a hooksPath in /opt, a file in .git it includes)
    home = git_named.home_files(root)
    files, fp.named = git_named.split(common, root, home)
    started, fp.odd = startup_files.look(inside)
    fp.home = {**started, **{path: watched.read(path, inside) for path in dict.fromkeys([*home, *files])}}
    if recorder_git is not None:
        fp.recorder_git, fp.recorder_git_files = recorder_git, take_files(recorder_git, inside)
    theirs = tuple(f"refs/heads/{kind}/{t}/" for t in other_topics for kind in ("node", "campaign"))
    from orchestrate import git_files  # the ref files read directly: a `for-each-ref` twice a node otherwise
    found = git_files.ref_files(root, skip=theirs)
    fp.refs = {name: sha for name, sha in (git.refs(root, "refs") if found is None else found).items()
               if name not in own_refs and not (name + "/").startswith(theirs)}
    if seen is not None:
        fp.checkout, fp.looked, fp.mark = seen.checkout, seen.looked, seen.mark
    elif look:
        _look(fp, root)
    else:  # no look needed now; one is, once anything starts outside the sandbox
        fp.mark = proc.unconfined()
    fp.recorder = {path: watched.read(path) for path in recorder_files}
    fp.folders = _folders(fp.home)
    real = {folder: os.path.realpath(folder) for folder in {p.parent for p in (*fp.recorder, *fp.home, *fp.folders)}}
    fp.places = {path: real[path.parent] for path in (*fp.recorder, *fp.home, *fp.folders)}
    fp.places[common] = os.path.realpath(common)
    if recorder_git is not None:
        fp.places[recorder_git] = os.path.realpath(recorder_git)
    return fp


def look_before_start(fp: Fingerprint | None, root: Path) -> None:
    """Before a process that can write the checkout starts: unless `fp` has a look at it already, look now,
    so a change it makes is told from what was there before it started. A look `fp` has is never replaced:
    what others changed since it is still to be compared, at the next check."""
    if fp is not None and not fp.checkout:
        _look(fp, root)


def _look(fp: Fingerprint, root: Path) -> None:
    fp.mark = proc.unconfined()  # before the look: a process that starts during it makes the next one due
    records = (*fp.files.values(), *fp.recorder_git_files.values(), *fp.home.values())
    fp.checkout, fp.looked = _checkout(root) | git_named.hashed(records, fp.named), time.monotonic()



def compare(before: Fingerprint, after: Fingerprint) -> tuple[list[str], list[str]]:
    """(changes to the git dir, changes to the user's checkout), each a list of sentences."""
    found = changed_files(before.files, after.files, ".git") + git_modules.changes(before.modules, after.modules) + \
        [f"{shown(p)} was created (not a file)" for p in after.odd if p not in before.odd]
    found += changed_files(before.recorder_git_files, after.recorder_git_files, ".ledger/.git")
    for name in sorted(set(before.refs) | set(after.refs)):
        old, new = before.refs.get(name), after.refs.get(name)
        if old != new:
            found.append(f"ref {name} " + ("was created" if old is None else "was deleted" if new is None
                                           else f"moved {old[:12]} -> {new[:12]}"))
    moved = {f for f in set(before.folders) | set(after.folders) if before.folders.get(f) != after.folders.get(f)}
    # a file a changed folder keeps out of reach is said with that folder, not on its own
    home = [path for path in set(before.home) | set(after.home)
            if after.home.get(path) != b"u" or moved.isdisjoint(path.parents)]
    found += _changed(before.recorder, after.recorder, shown) + \
        _changed({p: before.home.get(p) for p in home}, {p: after.home.get(p) for p in home}, shown)
    for folder in sorted(moved, key=str):
        old, new = before.folders.get(folder), after.folders.get(folder)
        found.append(f"the folder {shown(folder)} " + (
            f"was made unusable (mode {new[5:]})" if new and new.startswith("mode:") else
            "was created" if old is None else "was deleted" if new is None else "was changed"))
    checkout = [f"{k[len(LED):]}, which git reads or runs for you (your config names it, or a link of yours leads "
                "to it), changed" if k.startswith(LED)
                else f"the checkout's {k} changed" for k in sorted(before.checkout)
                if after.checkout and before.checkout[k] != after.checkout.get(k)]
    return found, checkout


NOT_PUT_BACK = watched.NOT_PUT_BACK


def rebased(now: Fingerprint, before: Fingerprint) -> Fingerprint:
    """`now` (refs, the checkout) with `before`'s watched files, the state they were put back to."""
    now.files, now.home, now.folders, now.modules, now.odd = before.files, before.home, before.folders, before.modules, \
        before.odd
    now.recorder, now.recorder_git_files, now.places = before.recorder, before.recorder_git_files, before.places
    now.inside, now.named = before.inside, before.named
    return now


def recorder_changes(before: Fingerprint) -> list[str]:
    """What changed among the recorder files since `before` (cheap: a few small files)."""
    now = Fingerprint(before.common, recorder={path: watched.read(path) for path in before.recorder})
    return compare(Fingerprint(before.common, recorder=before.recorder), now)[0]


def restore(before: Fingerprint, keep: Path | None = None) -> list[str]:
    """Put the watched files back as they were; returns what was put back. Refs are reported, not moved:
    orchestrate never force-moves a ref. An edited recorder file is first copied into `keep` (a person
    may have edited it during the run: the edit is not lost, only kept out of the recorder)."""
    # never written through a link of $HOME's: your checkout, its git dir, the recorder (rv26)
    out = before.inside
    put_back = restore_recorder(before, keep) + _restore_folders(before.folders, before.places)
    made = startup_files.created(before.home)  # listed once the folders are back: never through a link swapped in
    places = {**before.places, **{path: os.path.realpath(path.parent) for path in made}}
    put_back += _restore_paths({**made, **before.home}, keep, out, places) + startup_files.remove_odd(before.odd) + \
        put_back_files(before.common, before.files, ".git", before.places, out) + \
        git_modules.restore(before.common, before.modules, before.places, out, keep)
    if before.recorder_git is not None:
        put_back += put_back_files(before.recorder_git, before.recorder_git_files, ".ledger/.git", before.places, out)
    return put_back


def changed_files(before: dict[str, bytes | None], after: dict[str, bytes | None], shown: str) -> list[str]:
    """A git dir's changes; a watched folder that changed is said once, not each file it no longer lists."""
    folders = tuple(name for name in before if name.endswith("/") and before[name] != after.get(name))
    return _changed({n: r for n, r in before.items() if not n.startswith(folders) or n in folders},
                    {n: r for n, r in after.items() if not n.startswith(folders) or n in folders},
                    lambda name: f"{shown}/{name}")


def _changed(before: dict, after: dict, shown: Callable[[Any], str]) -> list[str]:
    """A sentence for each file (a name, or a path) whose content differs, as the user knows its place."""
    found = []
    for name in sorted(set(before) | set(after), key=str):
        old, new = before.get(name), after.get(name)
        if old != new:
            what = "was created" if old is None else "was deleted" if new is None else "was changed"
            if old and new and old[:1] == new[:1] in (b"f", b"d") and content(old) == content(new):
                what = f"changed mode {watched.mode(old)} -> {watched.mode(new)}"
            found.append(f"{shown(name)} {what}")
    return found


def put_back_files(base: Path, before: dict[str, bytes | None], shown: str, places: dict[Path, str] | None = None,
              inside: tuple[str, ...] = ()) -> list[str]:
    """The watched folders first (a folder put back as a folder is listed again), then the files in them; none
    in a folder that could not be put back (a link of yours, whose chain leads elsewhere now), nor in a git dir
    that is elsewhere now than when it was watched (`places`: a `.git` swapped for a link meanwhile, rv28)."""
    real = (places or {}).get(base) or os.path.realpath(base)
    if os.path.realpath(base) != real:
        return [f"{shown}/{watched.NOT_PUT_BACK}it leads elsewhere than when it was watched)"]
    put_back, lost = [], []
    for name in _WATCHED_DIRS:
        old = before.get(name + "/")
        if watched.folder_record(base / name) != old:
            try:
                watched.put_folder(base / name, old)
            except OSError as exc:
                put_back.append(f"{shown}/{name}/{watched.NOT_PUT_BACK}{exc.strerror})")
                lost.append(name + "/")
                continue
            if watched.folder_record(base / name) != old:
                put_back.append(f"{shown}/{name}/{watched.NOT_PUT_BACK}it leads elsewhere than when it was watched)")
                lost.append(name + "/")
            else:
                put_back.append(f"{shown}/{name}/")
    now = take_files(base, inside)
    for name in sorted(set(before) | set(now)):
        old = before.get(name)
        if now.get(name) != old and not name.endswith("/") and not name.startswith(tuple(lost)):
            put_back.append(f"{shown}/{name}" + _put_or_say(base / name, old, _place(real, name, before), inside))
    return put_back


def _place(real: str, name: str, before: dict[str, bytes | None]) -> str:
    """The real path of the folder the git-dir file `name` is in: below the git dir, or below the real path a
    watched folder of yours that is a link had when it was watched."""
    top, _, rest = name.partition("/")
    folder = before.get(top + "/") or b""
    if rest and folder[:1] == b"l":
        return os.path.normpath(os.path.join(os.fsdecode(folder[1:].partition(b"\0")[2]), os.path.dirname(rest)))
    return os.path.dirname(os.path.join(real, name))


def _put_or_say(path: Path, old: bytes | None, place: str, keep_out: tuple[str, ...] = ()) -> str:
    """Put `path` back as `old` (watched.put); what could not be, said after its name (the rest is still put back)."""
    try:
        return watched.put(path, old, place, keep_out)
    except OSError as exc:
        return f"{watched.NOT_PUT_BACK}{exc.strerror})"


def _folders(paths) -> dict[Path, str | None]:
    home = Path(os.path.expanduser("~"))
    found: dict[Path, str | None] = {}
    for path in paths:
        for folder in path.parents:  # (each folder looked at once: most of the files share theirs)
            if folder in found or folder == home or not folder.is_relative_to(home):  # what a worker may write
                break
            found[folder] = _folder(folder)
    return found


def _folder(folder: Path) -> str | None:
    """A link (`link:` its target); a folder its owner cannot use (`mode:` its mode: a worker's `chmod 0 ~/.config`
    switches off your global git config, silently); or not: a folder made where there was none (a tool's first
    `~/.config`) is no change, the files watched in it are. One that cannot be reached is taken as a folder: git
    cannot reach the files in it either, and their records say so."""
    try:
        st = folder.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            return "link:" + os.readlink(folder)
        except OSError:  # swapped again since the lstat: a change all the same
            return "other"
    if not stat.S_ISDIR(st.st_mode):
        return "other"
    return None if st.st_mode & 0o700 == 0o700 else f"mode:{stat.S_IMODE(st.st_mode):o}"


def _restore_folders(before: dict[Path, str | None], places: dict[Path, str]) -> list[str]:
    """Each folder on the way to a watched file in $HOME as it was, outermost first, before any file is
    written or removed there: what a worker put in a folder's place (a link to your checkout, say) is
    removed, never written through (watched.put_home_folder)."""
    put_back = []
    for folder in sorted(before, key=lambda f: len(f.parts)):
        old = before[folder]
        if _folder(folder) == old:
            continue
        try:
            watched.put_home_folder(folder, old, places.get(folder) or os.path.realpath(folder.parent))
            put_back.append(f"the folder {shown(folder)}")
        except OSError as exc:
            put_back.append(f"the folder {shown(folder)}{watched.NOT_PUT_BACK}{exc.strerror})")
    return put_back


def restore_recorder(before: Fingerprint, keep: Path | None) -> list[str]:
    return _restore_paths(before.recorder, keep, (), before.places)


def restore_file(path: Path, before: bytes | None, keep: Path | None) -> list[str]:
    """One watched file put back as `before` (its edited version copied into `keep` first)."""
    return _restore_paths({path: before}, keep, (), {path: os.path.realpath(path.parent)})


def read_watched(path: Path) -> bytes | None:
    """A watched file's bytes as a fingerprint holds them (None: there is none)."""
    return watched.read(path)


def _restore_paths(files: dict[Path, bytes | None], keep: Path | None, keep_out: tuple[str, ...],
                   places: dict[Path, str]) -> list[str]:
    put_back = []
    for path, old in files.items():
        new = watched.read(path, keep_out)
        if new == old:
            continue
        kept = content(new) if keep is not None else None
        if kept is not None:
            try:
                keep.mkdir(parents=True, exist_ok=True)
                watched.put(keep / path.name, b"f644\0" + kept, os.path.realpath(keep))
            except OSError:  # a worker's file where the folder would be: the edit is not kept, the rest goes on
                kept = None
        said = _put_or_say(path, old, places[path], keep_out) if path in places else \
            f"{watched.NOT_PUT_BACK}where it was is not known)"
        put_back.append(shown(path) + said +
                        (f" (the edited version is kept at {keep / path.name})" if kept is not None else ""))
    return put_back


def _listed(base: Path) -> list[Path]:
    """Every file and link below `base`, folders walked without recursion and never through a link (Path.rglob
    recurses: folders nested 1,200 deep raised RecursionError, exit 70)."""
    found, folders = [], [base]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(Path(entry.path))
                    else:
                        found.append(Path(entry.path))
        except OSError:  # a folder that cannot be listed: what is in it is what git cannot find either
            continue
    return found


def take_files(common: Path, inside: tuple[str, ...] = ()) -> dict[str, bytes | None]:
    """The watched files of a git dir, and each watched folder itself as `hooks/` (its record: a folder a worker
    swapped for a link is not listed through it, nor anything written through it when put back)."""
    files = {name: watched.read(common / name, inside) for name in _WATCHED_FILES}
    for folder in _WATCHED_DIRS:
        base = common / folder
        files[folder + "/"] = record = watched.folder_record(base)
        if record is not None and record[:1] in b"dl":  # through a link of yours; one a worker made is put back first
            for path in sorted(_listed(base)):
                if (name := str(path.relative_to(common))) not in _DERIVED:
                    files[name] = watched.read(path, inside)
    return files


def _checkout(root: Path) -> dict[str, str]:
    """HEAD, branch and status from one `git status` (porcelain v2's branch header names HEAD and its
    branch, as rev-parse and symbolic-ref would, in the same process), and the index's hash. Every untracked
    file is listed, not only its folder: a file added to a folder that was already untracked is a change.
    Renames are not looked for and ahead/behind is not counted: neither is needed to see a change, and both
    cost time on a big checkout or a long history."""
    index = root / ".git" / "index"
    fields = git.git(root, "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--no-renames", "-z",
                     "--untracked-files=all").stdout.split("\0")
    header = dict(f[2:].partition(" ")[::2] for f in fields if f.startswith("# "))
    entries = "\0".join(f for f in fields if not f.startswith("# "))
    head = header.get("branch.oid", "")
    return {"HEAD": "" if head == "(initial)" else head, "branch": header.get("branch.head", "(detached)"),
            "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.is_file() else "",
            "status": hashlib.sha256(entries.encode()).hexdigest()}


def shown(path: Path) -> str:
    """A recorder file as the user knows it, `.ledger/...`; a file in $HOME as `~/...`."""
    parts = path.parts
    if ".ledger" in parts:
        return "/".join(parts[parts.index(".ledger"):])
    home = Path(os.path.expanduser("~"))
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)
