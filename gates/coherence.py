"""coherence: nothing left pointing at what base..head removed; links resolve; the DAG validates; project gates pass.

Checks, in order:

1. references. The cut-set is every path the range deleted (`--no-renames`, so a rename deletes its old
   path), every directory that vanished with them, the names under `coherence.names` in
   `<ledger>/config.yaml`, and the names given to `check()`/`--name`. A line of a text file at head
   (binary files, `.ledger/`, `.scratch/` and `coherence.ignore` pathspecs are never searched) refers to a
   cut name when the name occurs on boundaries, case-sensitively:
   - a path (every deleted path, and any name with a `/`): the character before it is not a path
     character [A-Za-z0-9_./-] (a leading `./` is allowed); the character after it is not one either,
     except a `.` or `/` that is itself followed by a non-path character or the end of the line. "see
     docs/old.md." and `./docs/old.md` mention `docs/old.md`; `docs/old.md.bak`, `mydocs/old.md`,
     `x/docs/old.md` and `docs/old.md/x` do not. A directory (one that vanished,
     or a name ending in `/`) follows the same rule, except that a top-level one is mentioned only with its
     slash: `docs/` is a folder, "the docs" is a word.
   - a bare name (no `/`): it is not part of a longer word of [A-Za-z0-9_-]. `/ghost`, `skills/ghost/`,
     `ghost.md` and "the ghost workflow" mention `ghost`; `ghostly` and `/predicate-ghost` do not.
   An occurrence inside an http(s) URL does not count; other occurrences on the same line still do. In a
   markdown file the range did not change, a relative link that resolves to a deleted path is a reference
   too (links in changed files are the next check's business).
2. links: every relative link, image and link definition in the markdown files the range added or
   modified resolves at head (a file or directory, relative to the linking file, `/` = repository root),
   and an anchor into a markdown file names one of its headings (GitHub slugs) or HTML ids; and every
   symbolic link the range added or re-pointed, and every link whose chain goes through one, leads inside
   the repository, not into `.git`, `.ledger` or `.scratch` (gates/shared/symlinks.py): a link to
   `~/.cache/x/conftest.py` would have the evaluators, and whoever runs the merge later, read a file no
   gate ever sees (a sandboxed worker can write $HOME); nor does a gitlink the range added or moved have its
   submodule fetched from this machine (gates/shared/gitlinks.py).
3. dag: the DAG, when given, still validates.
4. project gates: executables in `<ledger>/gates/` (README* and dotfiles skipped), then the
   `coherence.evaluators` of config.yaml, run at the head tree with ORCH_BASE, ORCH_HEAD and ORCH_TOPIC.
   A gate or evaluator that cannot run makes the verdict 2: it never passes.
"""
from __future__ import annotations

import posixpath
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from gates.shared import gatecli, gitlinks, markdown, project_checks, symlinks
from gates.shared.verdict import FAIL, PASS, USAGE, Item, Verdict, usage
from orchestrate import git, git_diffs
from orchestrate.errors import OrchestrateError, UsageError

NAME = "coherence"
NEVER_SEARCHED = (".ledger", ".scratch")
_PATH_CHARS = "A-Za-z0-9_./-"
_WORD_CHARS = "A-Za-z0-9_-"
_URL = re.compile(r"https?://[^\s<>\"'`()\[\]{}]+", re.I)
_MAX_TEXT = 240  # an ORPHAN line quotes at most this much of the referring line


# ---- the head tree ----------------------------------------------------------------------------

class _Tree:
    """The files and directories at head, listed once, on first use."""

    def __init__(self, repo: Path, sha: str) -> None:
        self.repo, self.sha = repo, sha
        self._files: set[str] | None = None
        self._dirs: set[str] = set()
        self._text: dict[str, str | None] = {}

    @property
    def files(self) -> set[str]:
        if self._files is None:
            listing = git.git(self.repo, "ls-tree", "-r", "-z", "--name-only", self.sha).stdout
            self._files = {p for p in listing.split("\0") if p}
            for p in self._files:
                parts = p.split("/")
                self._dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return self._files

    @property
    def dirs(self) -> set[str]:
        _ = self.files
        return self._dirs

    def exists(self, path: str) -> bool:
        return path == "" or path in self.files or path in self.dirs

    def text(self, path: str) -> str | None:
        if path not in self._text:
            self._text[path] = git.show_file(self.repo, self.sha, path)
        return self._text[path]


def resolve_link(source: str, path: str) -> str | None:
    """The repository path a link in `source` points at ("" is the root), or None when it leaves the repository."""
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(source), path)
    norm = posixpath.normpath(joined) if joined else "."
    if norm == ".." or norm.startswith("../"):
        return None
    return "" if norm == "." else norm


def _never(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in NEVER_SEARCHED)


# ---- 1. references ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Cut:
    name: str  # as reported: a directory ends in `/`
    literal: str  # what git grep looks for
    pattern: re.Pattern


_BEFORE = rf"(?:(?<![{_PATH_CHARS}])|(?<=(?<![{_PATH_CHARS}])\./))"  # `./run.sh` mentions `run.sh`
_AFTER_PATH = rf"(?=$|[^{_PATH_CHARS}]|[./](?:$|[^{_PATH_CHARS}]))"
_AFTER_SLASH = rf"(?=$|[^{_PATH_CHARS}])"


def _cut(name: str, kind: str = "name") -> _Cut:
    """kind: "path" (a deleted file), "dir" (a vanished directory) or "name" (configured or given)."""
    if kind == "dir" or (kind == "name" and name.endswith("/")):
        stem = name.rstrip("/")
        if "/" not in stem:  # a bare `docs` is a word in prose; only `docs/` names the folder
            return _Cut(stem + "/", stem + "/", re.compile(_BEFORE + re.escape(stem + "/") + _AFTER_SLASH))
        return _Cut(stem + "/", stem, re.compile(_BEFORE + re.escape(stem) + _AFTER_PATH))
    if kind == "name" and "/" not in name and re.fullmatch(r"[A-Za-z0-9_.-]*[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        return _Cut(name, name, re.compile(rf"(?<![{_WORD_CHARS}]){re.escape(name)}(?![{_WORD_CHARS}])"))
    return _Cut(name, name, re.compile(_BEFORE + re.escape(name) + _AFTER_PATH))


def _cut_set(tree: _Tree, removed: list[str], names: Sequence[str]) -> list[_Cut]:
    cuts: dict[str, _Cut] = {}
    for path in removed:
        cuts.setdefault(path, _cut(path, "path"))
        parent = posixpath.dirname(path)
        while parent and not tree.exists(parent):  # the directory went with its last file
            cuts.setdefault(parent + "/", _cut(parent, "dir"))
            parent = posixpath.dirname(parent)
    for name in names:
        c = _cut(name)
        cuts.setdefault(c.name, c)
    return sorted(cuts.values(), key=lambda c: c.name)


def _grep(repo: Path, sha: str, literals: Sequence[str], ignore: Sequence[str]) -> list[tuple[str, int, str]]:
    """(path, line, text) of every line of a text file at `sha` holding any literal."""
    if not literals:
        return []
    excludes = [f":(exclude){p}" for p in (*NEVER_SEARCHED, *ignore)]
    done = git.git(repo, "grep", "-z", "-n", "-I", "-F", "--no-color", "-f", "-", sha, "--", ".", *excludes,
                   input="\n".join(dict.fromkeys(literals)) + "\n", check=False)
    if done.rc == 1:
        return []
    if done.rc != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"cannot search {sha[:12]} for references: git grep exited {done.rc}: {tail}")
    prefix = f"{sha}:"
    hits = []
    for m in re.finditer(r"(.*?)\0(\d+)\0([^\n]*)\n", done.stdout, re.S):
        path = m.group(1)[len(prefix):] if m.group(1).startswith(prefix) else m.group(1)
        hits.append((path, int(m.group(2)), m.group(3)))
    return hits


def _mentions(text: str, cuts: Sequence[_Cut]) -> list[str]:
    """Cut names `text` mentions outside URLs; a directory is dropped when a path under it is mentioned too."""
    urls = [m.span() for m in _URL.finditer(text)]
    found = []
    for c in cuts:
        if c.literal in text and any(not any(a <= m.start() < b for a, b in urls) for m in c.pattern.finditer(text)):
            found.append(c.name)
    return [n for n in found if not (n.endswith("/") and any(o != n and o.startswith(n) for o in found))]


def _orphan(path: str, line: int, text: str, name: str, how: str = "") -> Item:
    text = text.strip()
    if len(text) > _MAX_TEXT:
        text = text[:_MAX_TEXT - 1] + "…"
    return Item("ORPHAN", f"{path}:{line}: {text}", f"refers to removed {name}{how}")


def _references(repo: Path, tree: _Tree, cuts: list[_Cut], removed: set[str], ignore: Sequence[str],
                skip_links: set[str]) -> list[Item]:
    basenames = {posixpath.basename(p) for p in removed}
    hits = _grep(repo, tree.sha, [c.literal for c in cuts] + sorted(basenames), ignore)
    found: dict[tuple[str, int, str], Item] = {}
    scan: set[str] = set()
    for path, line, text in hits:
        for name in _mentions(text, cuts):
            found[(path, line, name)] = _orphan(path, line, text, name)
        if markdown.is_markdown(path) and path not in skip_links and any(b in text for b in basenames):
            scan.add(path)
    vanished = [c.name for c in cuts if c.name.endswith("/")]
    for path in sorted(scan):
        body = tree.text(path) or ""
        lines = body.splitlines()
        for link in markdown.links(body):
            if not link.target or markdown.is_external(link.target):
                continue
            target = resolve_link(path, markdown.split_target(link.target)[0])
            if not target:
                continue
            name = target if target in removed else next(
                (d for d in vanished if (target + "/").startswith(d)), None)
            if name and (path, link.line, name) not in found:
                found[(path, link.line, name)] = _orphan(path, link.line, lines[link.line - 1], name,
                                                         f" (relative link {link.target})")
    return [found[k] for k in sorted(found)]


# ---- 2. links ---------------------------------------------------------------------------------

def _links(tree: _Tree, files: Sequence[str]) -> tuple[list[Item], int]:
    broken: list[Item] = []
    count = 0
    anchors: dict[str, set[str]] = {}
    for source in files:
        body = tree.text(source)
        if body is None:
            continue
        for link in markdown.links(body):
            if not link.target or markdown.is_external(link.target):
                continue
            count += 1
            subject = f"{source}:{link.line}: {link.source()}"
            path, anchor = markdown.split_target(link.target)
            target = resolve_link(source, path) if path else source
            if target is None:
                broken.append(Item("BROKEN", subject, "no such file (it would be outside the repository)"))
                continue
            if not tree.exists(target):
                broken.append(Item("BROKEN", subject, "no such file"))
                continue
            if anchor and markdown.is_markdown(target) and target in tree.files:
                if target not in anchors:
                    anchors[target] = markdown.anchors(tree.text(target) or "")
                if anchor.lower() not in anchors[target]:
                    broken.append(Item("BROKEN", subject, f"no heading #{anchor} in {target}"))
    return broken, count


def needs_checkout(ledger: Path | None) -> bool:
    """Will `check` run anything on the head's files (project gates, configured evaluators)? The rest of
    coherence reads commits, so a caller without them needs no checkout of the head."""
    try:
        return bool(project_checks.gate_files(ledger)) or bool(project_checks.load_config(ledger).evaluators)
    except (OrchestrateError, OSError):  # a config `check` refuses: it says so itself
        return True


@contextmanager
def _head_tree(repo: Path, head: str, worktree: Path | None, needed: bool) -> Iterator[Path]:
    """Where project gates run: the given worktree; the repository when it has head checked out; else a
    throwaway detached worktree of head (so they never judge some other tree)."""
    if worktree is not None or not needed or git.rev_parse(repo, "HEAD") == head:
        yield Path(worktree or repo)
        return
    scratch = Path(tempfile.mkdtemp(prefix="orchestrate-coherence-"))
    where = scratch / "head"
    try:
        git.worktree_add_detached(repo, where, head)
        yield where
    finally:
        git.worktree_remove(repo, where)
        shutil.rmtree(scratch, ignore_errors=True)


# ---- the gate ---------------------------------------------------------------------------------

def check(repo: Path, base: str, head: str, *, ledger: Path | None = None, names: Sequence[str] = (),
          dag_path: Path | None = None, topic: str | None = None, worktree: Path | None = None,
          project_gates: bool = True, brief_dir: Path | None = None) -> Verdict:
    """Judge base..head of `repo`. `ledger` holds config.yaml and gates/ (default: `.ledger` of the main
    worktree, if any); `worktree` is a checkout of head for project gates and evaluators; the engine passes
    `project_gates=False` per node, leaving `<ledger>/gates/` to the layer boundary."""
    try:
        return _judge(Path(repo), base, head, ledger, names, dag_path, topic, worktree, project_gates, brief_dir)
    except OrchestrateError as exc:
        return usage(NAME, str(exc))


def _judge(repo: Path, base: str, head: str, ledger: Path | None, names: Sequence[str], dag_path: Path | None,
           topic: str | None, worktree: Path | None, project_gates: bool,
           brief_dir: Path | None = None) -> Verdict:
    if not repo.is_dir():
        raise UsageError(f"{repo}: no such directory", hint="pass --repo DIR, a checkout of the project")
    top = git.toplevel(repo)
    base_sha, head_sha = git.resolve(top, base), git.resolve(top, head)
    if ledger is None:
        default = git.main_worktree(top) / ".ledger"
        ledger = default if default.is_dir() else None
    config = project_checks.load_config(ledger)
    for n in names:
        if not isinstance(n, str) or not n.strip() or "\n" in n:
            raise UsageError(f"`{n!r}` is not a usable name: give a non-empty one-line string")
    gates = project_checks.gate_files(ledger) if project_gates else []

    changes = git.changed_paths(top, base_sha, head_sha)
    tree = _Tree(top, head_sha)
    deleted = {p for s, p in changes if s == "D"}
    # a file that became a folder lives on, so its path is not cut
    removed = sorted(p for p in deleted if p not in tree.dirs) if deleted else []
    changed_md = sorted(p for s, p in changes if s in "AMT" and markdown.is_markdown(p) and not _never(p))
    cuts = _cut_set(tree, removed, [*config.names, *(n.strip() for n in names)])

    items: list[Item] = []
    failed: list[str] = []

    orphans = _references(top, tree, cuts, set(removed), config.ignore, set(changed_md))
    items += orphans
    if orphans:
        failed.append("references")
        items.append(Item("FAIL", "references", f"{len(orphans)} surviving reference(s)"))
    else:
        items.append(Item("PASS", f"references: no surviving reference to {len(cuts)} removed name(s)"))

    broken, count = _links(tree, changed_md)
    made = git_diffs.links(top, base_sha, head_sha)
    broken += [Item("BROKEN", f"{path} -> {target}", f"a symbolic link leading {where}")
               for path, target, where in symlinks.leaving(top, head_sha, made)]
    moved = git_diffs.links(top, base_sha, head_sha, "160000")
    remote = lambda: git.git(top, "config", "--get", "remote.origin.url",  # noqa: E731
                             check=False).stdout.strip() or None
    broken += [Item("BROKEN", f"{path} (a gitlink, url {url})", "a submodule fetched from this machine: what it "
                    "holds is never judged")
               for path, url in gitlinks.local(tree.text(".gitmodules") if moved else "", moved, remote)]
    items += broken
    where = f"{count} link(s) in {len(changed_md)} changed markdown file(s)" + \
        (f" and {len(made)} symbolic link(s) made or re-pointed" if made else "")
    if broken:
        failed.append("links")
        items.append(Item("FAIL", "links", f"{len(broken)} of {where} do not resolve or lead out"))
    else:
        items.append(Item("PASS", f"links: {where} resolve" + (", inside the repository" if made else "")))

    if dag_path is not None:
        from orchestrate.dag.load import check_dag  # yaml is heavy; load it only when a DAG is asked for
        dag, problems = check_dag(dag_path, topic=topic, brief_dir=brief_dir)  # a campaign's copy: briefs stay home
        if dag is None or problems:
            failed.append("dag")
            first = f": {problems[0]}" if problems else ""
            items.append(Item("FAIL", "dag", f"{len(problems)} problem(s){first}"))
        else:
            items.append(Item("PASS", f"dag: {dag_path} still validates ({len(dag.nodes)} node(s))"))

    env = {"ORCH_BASE": base_sha, "ORCH_HEAD": head_sha, **({"ORCH_TOPIC": topic} if topic else {})}
    with _head_tree(top, head_sha, worktree, needed=bool(gates or config.evaluators)) as cwd:
        ran = [project_checks.run_gate(g, cwd, env, config.timeout) for g in gates]
        ran += [project_checks.run_evaluator(ev, cwd, env, config.timeout) for ev in config.evaluators]
    items += ran
    failed += [i.subject for i in ran if i.status == "FAIL"]
    cannot = [i.subject for i in ran if i.status == "ERROR"]

    data = {"base": base_sha, "head": head_sha, "cut_set": [c.name for c in cuts], "failed": failed,
            "changed_markdown": changed_md, "ledger": str(ledger) if ledger else None}
    if cannot:
        return Verdict(NAME, USAGE, f"ERROR: {len(cannot)} gate(s) or evaluator(s) could not run: {', '.join(cannot)}",
                       tuple(items), data)
    if failed:
        return Verdict(NAME, FAIL, f"INCOHERENT: {len(failed)} check(s) failed", tuple(items), data)
    return Verdict(NAME, PASS, "COHERENT: every check passed", tuple(items), data)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(
        NAME, "Check that base..head left nothing incoherent: no surviving reference to a removed or renamed "
              "path or a configured name, relative markdown links and anchors in changed files resolve, the DAG "
              "still validates, and the project gates in <ledger>/gates/ and coherence.evaluators pass.",
        {0: "COHERENT: every check passed",
         1: "INCOHERENT: an orphan reference, a broken link, an invalid DAG or a failing project gate",
         2: "bad refs, not a repository, a malformed config.yaml, or a gate/evaluator that cannot run"}, prog,
        examples=(
            'orchestrate gate coherence --base HEAD~1',
            'orchestrate gate coherence --base main --head campaign/demo --dag .ledger/state/dag.yaml',
        ))
    p.add_argument("--base", required=True, metavar="REV", help="the commit before the change")
    p.add_argument("--head", default="HEAD", metavar="REV", help="the commit after it (default HEAD)")
    p.add_argument("--repo", type=Path, default=Path("."), metavar="DIR", help="a checkout of the project (default .)")
    p.add_argument("--ledger", type=Path, metavar="DIR",
                   help="the recorder holding config.yaml and gates/ (default: .ledger of the main worktree)")
    p.add_argument("--name", action="append", default=[], metavar="N", help="one more removed name (repeatable)")
    p.add_argument("--dag", type=Path, metavar="PATH", help="a DAG file that must still validate")
    p.add_argument("--topic", metavar="T", help="the campaign topic (ORCH_TOPIC for project gates)")

    def decide(a) -> Verdict:
        if a.ledger is not None and not a.ledger.is_dir():
            raise UsageError(f"{a.ledger}: no such ledger directory", hint="pass --ledger DIR holding config.yaml")
        return check(a.repo, a.base, a.head, ledger=a.ledger, names=a.name, dag_path=a.dag, topic=a.topic)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
