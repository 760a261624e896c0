"""Run by a hostile worker in tests: rewrite its worktree's index so that every entry's stat data is the file's
as it is now, with a valid checksum; git then takes every file for unchanged without reading it."""
import hashlib
import os
import struct
import subprocess

path = subprocess.run(["git", "rev-parse", "--git-path", "index"], capture_output=True, text=True,
                      check=True).stdout.strip()
data = open(path, "rb").read()
assert data[:4] == b"DIRC" and struct.unpack(">I", data[4:8])[0] == 2
count = struct.unpack(">I", data[8:12])[0]
out, at = bytearray(data), 12
for _ in range(count):
    end = data.index(b"\0", at + 62)
    st = os.lstat(data[at + 62:end].decode())
    out[at:at + 24] = struct.pack(">6I", int(st.st_ctime), st.st_ctime_ns % 10**9, int(st.st_mtime),
                                  st.st_mtime_ns % 10**9, st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF)
    out[at + 36:at + 40] = struct.pack(">I", st.st_size)
    at += (62 + end - (at + 62) + 8) & ~7
out[-20:] = hashlib.sha1(bytes(out[:-20])).digest()
open(path, "wb").write(out)
