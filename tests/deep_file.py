"""Run by a hostile worker and its evaluator in tests: `deep_file.py write` makes secret.txt (holding
"hidden") at the end of 20 nested folders of 250-byte names, a path longer than PATH_MAX (4096 bytes), made
and read one folder at a time (each opened relative to the last): no program can open it by its name, git
included. `deep_file.py read` prints what the file holds."""
import os
import sys

NAME, DEPTH = "d" * 250, 20


def descend(create: bool) -> int:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        if create:
            _mkdir(fd)
        inner = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def _mkdir(fd: int) -> None:
    try:
        os.mkdir(NAME, dir_fd=fd)
    except FileExistsError:
        pass


if __name__ == "__main__":
    folder = descend(sys.argv[1] == "write")
    if sys.argv[1] == "write":
        out = os.open("secret.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=folder)
        os.write(out, b"hidden\n")
    else:
        out = os.open("secret.txt", os.O_RDONLY, dir_fd=folder)
        sys.stdout.write(os.read(out, 100).decode())
