"""Run by a hostile worker in tests: `forge_untracked.py NAME`. With the untracked-file cache in its worktree's
index listing the top folder as it is now, create NAME there, then write the folder's new stat data into the
cache (with a valid checksum): git then takes the cached listing, made before NAME existed, for current, and
no `git status` or `git add -A` that reads this index sees NAME."""
import hashlib
import os
import struct
import subprocess
import sys
import time


def stat_data(st: os.stat_result) -> bytes:
    """A folder's stat data as git's index stores it: nine 32-bit fields."""
    fields = (int(st.st_ctime), st.st_ctime_ns % 10**9, int(st.st_mtime), st.st_mtime_ns % 10**9, st.st_dev,
              st.st_ino, st.st_uid, st.st_gid, st.st_size)
    return struct.pack(">9I", *(f & 0xFFFFFFFF for f in fields))


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


# the cache, made now, for listings of every untracked file (the mode orchestrate's status asks for)
git("-c", "core.untrackedCache=true", "-c", "status.showUntrackedFiles=all", "status", "--porcelain", "-uall")
index = git("rev-parse", "--git-path", "index")
before = stat_data(os.stat("."))
with open(sys.argv[1], "w") as fh:
    fh.write("hidden\n")
time.sleep(1.1)  # the folder's times older than the index written below: git trusts them
data = bytearray(open(index, "rb").read())
at = data.find(b"UNTR")
assert at > 0 and data.count(before, at) == 1, "no untracked-file cache holding the top folder's stat data"
spot = data.index(before, at)
data[spot:spot + 36] = stat_data(os.stat("."))
data[-20:] = hashlib.sha1(bytes(data[:-20])).digest()
open(index, "wb").write(data)
