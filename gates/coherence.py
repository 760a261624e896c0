"""coherence: nothing left pointing at what was removed; links resolve; the DAG validates; project gates pass.

A reference is a mention of a removed path (or a configured name) in a text file that survives at
head. A removed path matches only on path boundaries: the character before it is not one of
[A-Za-z0-9_./-], and the one after is not [A-Za-z0-9_-], nor a `.` or `/` that continues the path
(`docs/old.md.bak` and `mydocs/old.md` do not mention `docs/old.md`; "see docs/old.md." does). A
configured name matches as a word: not inside a longer name of [A-Za-z0-9_-] (`/ghost` and `the ghost
workflow` mention `ghost`; `ghostly` does not). A mention inside a URL is
not a reference, but a URL elsewhere on the line hides nothing.
"""
from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Sequence

from gates.core import gatecli, git, markdown, proc
from gates.core.errors import OrchestrateError, UsageError
from gates.core.verdict import FAIL, PASS, USAGE, Item, Verdict

NAME = "coherence"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
_NEVER = (".ledger", ".scratch")


def check(repo: Path, base: str, head: str, *, ledger: Path | None = None, names: Sequence[str] = (),
          dag_path: Path | None = None, topic: str | None = None, worktree: Path | None = None,
          project_gates: bool = True) -> Verdict:
    try:
        return _judge(Path(repo), base, head, ledger, names, dag_path, topic, worktree, project_gates)
    except OrchestrateError as exc:
        return Verdict(NAME, USAGE, f"ERROR: {exc}")


def _judge(repo, base, head, ledger, names, dag_path, topic, worktree, project_gates) -> Verdict:
    base_sha, head_sha = git.resolve(repo, base), git.resolve(repo, head)
    if ledger is None:
        candidate = git.main_worktree(repo) / ".ledger"
        ledger = candidate if candidate.is_dir() else None
    config = _config(ledger)
    changes = git.changed_paths(repo, base_sha, head_sha)
    removed = {p for s, p in changes if s == "D"}
    named = (set(names) | {str(n) for n in config.get("names") or []}) - removed
    cut = sorted(removed | named)
    items: list[Item] = []
    failed: list[str] = []
    usage: list[str] = []

    ignore = [str(x) for x in config.get("ignore") or []]
    orphans = _references(repo, head_sha, {**{p: _path_pattern(p) for p in removed},
                                           **{n: _name_pattern(n) for n in named}}, ignore)
    items += orphans
    items.append(Item("FAIL" if orphans else "PASS", "references",
                      f"{len(orphans)} surviving reference(s)" if orphans else
                      f"no surviving reference to {len(cut)} removed name(s)"))
    if orphans:
        failed.append("references")

    changed_md = sorted(p for s, p in changes if s in "AM" and p.endswith((".md", ".markdown")) and not p.startswith(_NEVER))
    broken, count = _links(repo, head_sha, changed_md)
    items += broken
    items.append(Item("FAIL" if broken else "PASS", "links", f"{len(broken)} broken" if broken else
                      f"{count} link(s) in {len(changed_md)} changed markdown file(s) resolve"))
    if broken:
        failed.append("links")

    if dag_path is not None:
        from gates.core.dagfile import check_dag
        dag, problems = check_dag(dag_path, topic=topic)
        items.append(Item("FAIL" if dag is None else "PASS", "dag",
                          f"{len(problems)} problem(s): {problems[0]}" if dag is None else "the DAG still validates"))
        if dag is None:
            failed.append("dag")

    where = Path(worktree or repo)
    env = {"ORCH_BASE": base_sha, "ORCH_HEAD": head_sha, **({"ORCH_TOPIC": topic} if topic else {})}
    for name, run in _evaluators(config):
        done = proc.run_shell(run, cwd=where, env=env, timeout=600)
        if done.rc in (126, 127):
            items.append(Item("ERROR", f"evaluator {name}", f"cannot start (rc {done.rc}): `{run}`"))
            usage.append(name)
        elif done.rc:
            items.append(Item("FAIL", f"evaluator {name}", f"rc {done.rc}"))
            failed.append(name)
        else:
            items.append(Item("PASS", f"evaluator {name}"))
    if project_gates and ledger is not None and (ledger / "gates").is_dir():
        for path in sorted((ledger / "gates").iterdir()):
            if path.name.startswith(".") or path.name.upper().startswith("README") or not path.is_file():
                continue
            if not os.access(path, os.X_OK):
                items.append(Item("ERROR", f"gate {path.name}", "not executable: chmod +x it or remove it"))
                usage.append(path.name)
                continue
            done = proc.run([str(path)], cwd=where, env=env, timeout=600)
            ok = bool(done)
            items.append(Item("PASS" if ok else "FAIL", f"gate {path.name}", "" if ok else f"rc {done.rc}"))
            if not ok:
                failed.append(path.name)
    data = {"cut_set": cut, "failed": failed}
    if usage:
        return Verdict(NAME, USAGE, f"ERROR: {len(usage)} evaluator(s) could not run: {', '.join(usage)}",
                       tuple(items), data)
    if failed:
        return Verdict(NAME, FAIL, f"INCOHERENT: {len(failed)} check(s) failed", tuple(items), data)
    return Verdict(NAME, PASS, "COHERENT: every check passed", tuple(items), data)


def _config(ledger: Path | None) -> dict:
    if ledger is None or not (ledger / "config.yaml").exists():
        return {}
    import yaml
    try:
        data = yaml.safe_load((ledger / "config.yaml").read_text()) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{ledger / 'config.yaml'}: malformed YAML: {' '.join(str(exc).split())}") from None
    section = data.get("coherence") if isinstance(data, dict) else None
    if section is not None and not isinstance(section, dict):
        raise UsageError(f"{ledger / 'config.yaml'}: `coherence` must be a mapping")
    return section or {}


def _evaluators(config: dict) -> list[tuple[str, str]]:
    out = []
    for i, ev in enumerate(config.get("evaluators") or []):
        if not isinstance(ev, dict) or not ev.get("run"):
            raise UsageError(f"config.yaml: coherence.evaluators[{i}] needs `run`")
        out.append((str(ev.get("name", f"evaluator{i + 1}")), str(ev["run"])))
    return out


def _path_pattern(path: str) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9_./-])" + re.escape(path) + r"(?![A-Za-z0-9_-]|[./][A-Za-z0-9_-])")


def _name_pattern(name: str) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9_-])" + re.escape(name) + r"(?![A-Za-z0-9_-])")


def _references(repo: Path, head: str, patterns: dict[str, re.Pattern], ignore: list[str]) -> list[Item]:
    if not patterns:
        return []
    args = ["grep", "-n", "-I", "-F"] + [x for n in patterns for x in ("-e", n)] + [head, "--", "."]
    args += [f":(exclude){p}" for p in (*_NEVER, *ignore)]
    done = git.git(repo, *args, check=False)
    if done.rc not in (0, 1):
        raise UsageError(f"git grep failed: {done.stderr.strip()}")
    found = []
    for line in done.stdout.splitlines():
        _, path, number, text = line.split(":", 3)
        visible = _URL.sub(lambda m: " " * len(m.group()), text)
        for name, pat in patterns.items():
            if pat.search(visible):
                found.append(Item("ORPHAN", f"{path}:{number}: {text.strip()}", f"refers to removed {name}"))
                break
    return found


def _links(repo: Path, head: str, files: list[str]) -> tuple[list[Item], int]:
    broken, count = [], 0
    cache: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in cache:
            cache[path] = git.show_file(repo, head, path)
        return cache[path]

    for path in files:
        text = read(path)
        if text is None:
            continue
        for line, label, target in markdown.links(text):
            if markdown.is_external(target):
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = posixpath.normpath(file_part.lstrip("/") if file_part.startswith("/")
                                              else posixpath.join(posixpath.dirname(path), file_part))
                if resolved.startswith("../") or not _exists(repo, head, resolved):
                    broken.append(Item("BROKEN", f"{path}:{line}: [{label}]({target})", "no such file"))
                    continue
            else:
                resolved = path
            if anchor:
                body = read(resolved)
                if body is not None and anchor.lower() not in markdown.anchors(body):
                    broken.append(Item("BROKEN", f"{path}:{line}: [{label}]({target})", f"no heading #{anchor} in {resolved}"))
    return broken, count


def _exists(repo: Path, head: str, path: str) -> bool:
    return bool(git.git(repo, "cat-file", "-e", f"{head}:{path}", check=False)) if path not in ("", ".") else True


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Check that the change base..head left nothing incoherent: no surviving reference to "
                       "a removed path or configured name, every relative markdown link and anchor in changed "
                       "files resolves, the DAG validates, project gates in .ledger/gates/ pass.",
                       {0: "COHERENT", 1: "INCOHERENT: a check failed",
                        2: "bad refs or config, or an evaluator or gate that cannot run"}, prog)
    p.add_argument("--base", required=True, help="the commit before the change")
    p.add_argument("--head", default="HEAD", help="the commit after it (default HEAD)")
    p.add_argument("--repo", type=Path, default=Path("."), help="the repository (default .)")
    p.add_argument("--ledger", type=Path, help="the recorder holding config.yaml and gates/ (default: .ledger)")
    p.add_argument("--name", action="append", default=[], help="another removed name (repeatable)")
    p.add_argument("--dag", type=Path, help="a DAG that must still validate")
    p.add_argument("--topic", help="the campaign topic, for project gates")

    def decide(a) -> Verdict:
        return check(a.repo, a.base, a.head, ledger=a.ledger, names=a.name, dag_path=a.dag, topic=a.topic)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
