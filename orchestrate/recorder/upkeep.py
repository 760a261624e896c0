"""What the recorder's git repository needs beside its commits: its index set to its branch when a command
ends, and its loose objects packed while a long campaign runs.

The index. Commits are made through git writers kept open (recorder/snapshot.py, orchestrate/git_pipe.py),
not through the index, which therefore stays at the last commit git staged. When a command ends (the CLI's
boundary calls `finish`; the process's exit too) the index of every recorder it committed to is set to the
branch, so that `git status` in .ledger shows only what changed since; after a crash, `resume` sets it.

Packing. Every transition commits the live journal again (up to a segment, recorder/segments.py; before
segments, the whole journal: 256 trivial nodes left 147 MB in 7,000 loose objects, 1.7 MB once packed, as the
journal's versions delta-compress against each other). Each time the commits of this process have written about
PACK_AFTER bytes of live journal (stored loose without compression, git_pipe.py: so that is about the most they
take on disk between two packs; sealed segments and checkpoints are not counted), a `git repack -d -q -n` packs
what is loose, in a thread, while the run goes on: git's object store takes writers and readers while it packs
(that is how `git gc` runs behind other commands; no writer looks up what an object names, and one whose write
fails ends and is asked again: see git_pipe). One pack thread and a delta window of 4 keep it light
(pack-objects sorts the journal's versions next to each other, so each finds the one before it): 256 trivial
nodes, 147 MB -> 13 MB, for about 2 s more of a 28 s run on 2 cores, against 4.5 s with git's defaults. Every
CONSOLIDATE_EVERY-th repack merges the packs into one (`-a -k`, keeping what no ref reaches). A command waits
for its repacks to end before it returns.
"""
from __future__ import annotations

import atexit
import sys
import threading
from pathlib import Path

from orchestrate import git
from orchestrate.errors import OrchestrateError

PACK_AFTER = 64 * 2**20
CONSOLIDATE_EVERY = 8

_left_behind: set[str] = set()  # recorders whose index this process's commits left behind
_written: dict[str, int] = {}  # recorder -> journal bytes committed since its last repack began
_repacks: dict[str, int] = {}  # recorder -> repacks started by this process
_running: dict[str, threading.Thread] = {}
_failed: dict[str, str] = {}  # recorder -> what git said when a repack of it failed


def left_behind(ledger: Path) -> None:
    _left_behind.add(str(ledger))


def committed(ledger: Path, journal_bytes: int) -> None:
    """A commit holding a journal of `journal_bytes` was made: pack the recorder once enough was written."""
    key = str(ledger)
    _written[key] = _written.get(key, 0) + journal_bytes
    if _written[key] < PACK_AFTER or (key in _running and _running[key].is_alive()):
        return
    _written[key] = 0
    _repacks[key] = _repacks.get(key, 0) + 1
    whole = _repacks[key] % CONSOLIDATE_EVERY == 0
    thread = threading.Thread(target=_repack, args=(ledger, whole), name="recorder-repack", daemon=True)
    _running[key] = thread
    thread.start()


def _loose_bytes(ledger: Path) -> int:
    """What the recorder's loose objects take on disk (`git count-objects`: no object is read)."""
    done = git.git(ledger, "count-objects", "-v", check=False)
    sizes = [line.removeprefix("size: ") for line in done.stdout.splitlines() if line.startswith("size: ")]
    return int(sizes[0]) * 1024 if sizes and sizes[0].isdigit() else 0


def _repack(ledger: Path, whole: bool) -> None:
    # -n: no update-server-info (info/refs is in the git dir the watch fingerprints, and nobody fetches over http).
    # -k with -a: what no ref reaches is kept, not dropped: git does not write an object it finds in a pack (it
    # touches the pack), so a commit being made names objects no ref reaches yet, and some may be only there (rv43)
    try:
        done = git.git(ledger, "-c", "pack.threads=1", "repack", "-d", "-q", "-n", "--window=4",
                       *(["-a", "-k"] if whole else []), check=False)
    except (OrchestrateError, OSError):  # git cannot be run here (a config too big to read): the command's own
        return  # next git call says so (rv44: in this thread it was a traceback)
    if done.rc == 0:
        _failed.pop(str(ledger), None)
    else:  # kept for `finish` to say: a recorder that cannot be packed keeps every journal uncompressed
        _failed[str(ledger)] = (done.stderr.strip() or f"exit {done.rc}").splitlines()[-1]


def finish() -> None:
    """At the end of a command: its repacks waited for, the loose objects of a recorder it committed to
    packed if they reach PACK_AFTER on disk (short commands each write less than that, and their loose
    blobs are uncompressed: a campaign driven by many of them would otherwise keep them all), a repack that
    failed and was not followed by one that succeeded said on stderr (git cannot pack a history it cannot read
    whole, or a full disk), every index its commits left behind set to the branch (a recorder gone meanwhile is
    skipped)."""
    while _running:
        _, thread = _running.popitem()
        try:
            thread.join()
        except KeyboardInterrupt:  # a second Ctrl-C at the end: git finishes its pack alone, harmlessly
            return
    while _written:
        key, since = _written.popitem()
        try:  # after the command's own error was said (a config git cannot be run with, say): nothing more to say
            if since and (Path(key) / ".git").is_dir() and _loose_bytes(Path(key)) >= PACK_AFTER:
                _repack(Path(key), whole=False)
        except (OrchestrateError, OSError):
            continue
    while _failed:
        key, said = _failed.popitem()
        if not (Path(key) / ".git").is_dir():  # removed since: nothing is left to pack
            continue
        try:  # (stderr's reader may be gone: a command that did its work must not fail on this line)
            print(f"orchestrate: warning: {key}: the recorder's loose objects could not be packed ({said}); they "
                  "stay uncompressed until a pack succeeds (`orchestrate doctor` says whether its history is whole)",
                  file=sys.stderr)
        except (OSError, ValueError):
            pass
    while _left_behind:
        ledger = Path(_left_behind.pop())
        if not (ledger / ".git").is_dir():
            continue
        try:
            sync_index(ledger)
        except (OrchestrateError, OSError):  # removed, or no longer a repository: nothing to show anyone
            continue


atexit.register(finish)


def sync_index(ledger: Path) -> None:
    """The recorder's index set to its branch's commit (file contents untouched), under the recorder-wide
    lock (a runner of another topic may be staging)."""
    from orchestrate.recorder.lock import RecorderLock
    with RecorderLock(ledger):
        head = git.rev_parse(ledger, "HEAD")
        if head:
            git.git(ledger, "reset", "--quiet", head, "--", ".")
