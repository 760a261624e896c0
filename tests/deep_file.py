"""Run by a hostile worker and its evaluator in tests. `deep_file.py write` makes secret.txt (holding "hidden")
at the end of 20 nested folders of 250-byte names, a path longer than PATH_MAX (4096 bytes), made and read one
folder at a time (each opened relative to the last): no program can open it by its name, git included.
`deep_file.py forge` commits "A" at a path past PATH_MAX (by `update-index --cacheinfo`, which never looks at
the file) below folders that fit, named so that the line `git status` prints for it, `<the path>: File name
too long`, reads as git's warning about an ignore file it would not open; then writes "B" into it.
`deep_file.py read` / `read-forged` prints what either file holds."""
import os
import subprocess
import sys

NAME, DEPTH = "d" * 250, 20
# the folders' path 4090 bytes (git opens it), the file's 4102 (git cannot stat it), and the line git prints
# for it reads as its warning about a .gitignore it would not open
FORGED_TOP, FORGED_DEPTH, FORGED_FILE = "warning: unable to access 'x", 16, ".gitignore'"


def descend(folders: list[str], create: bool) -> int:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    for name in folders:
        if create:
            try:
                os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                pass
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def put(folder: int, name: str, data: bytes) -> None:
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=folder)
    os.write(out, data)
    os.close(out)


if __name__ == "__main__":
    deep, forged = [NAME] * DEPTH, [FORGED_TOP] + [NAME] * FORGED_DEPTH + ["e" * 45]
    if sys.argv[1] == "write":
        put(descend(deep, True), "secret.txt", b"hidden\n")
    elif sys.argv[1] == "forge":
        folder = descend(forged, True)
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"A\n", capture_output=True,
                              check=True).stdout.decode().strip()
        rel = "/".join(forged + [FORGED_FILE])
        subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}"], check=True)
        subprocess.run(["git", "commit", "-qm", "a path past PATH_MAX"], check=True)
        put(folder, FORGED_FILE, b"B\n")
    else:
        folder, name = (descend(deep, False), "secret.txt") if sys.argv[1] == "read" else \
            (descend(forged, False), FORGED_FILE)
        sys.stdout.write(os.read(os.open(name, os.O_RDONLY, dir_fd=folder), 100).decode())
