"""Close check: the recorder branch closed the topic after its last open, with a Sufficiency Review of real prose."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from gates.shared import gatecli
from gates.shared.verdict import FAIL, PASS, Item, Verdict, usage
from orchestrate import git
from orchestrate.dag.schema import topic_problem
from orchestrate.errors import ProcError, UsageError

GATE = "close-check"

RULES = """\
On the recorder's branch (its current branch, or --branch; first-parent history only, so no sibling
project's branch ever counts), the newest `log: close <topic>` must come after the newest
`log: open <topic>` (a branch with no open fails too); that newest close is the one judged. A marker
is the subject `log: open <topic>` alone or followed by whitespace and more text, so topic `demo`
never matches `log: close demo-topic ...`.

The close commit must touch a file that, as of that commit, holds a Sufficiency Review section:
  - an ATX markdown heading (`#` to `######`, any level) whose text starts with "Sufficiency Review"
    (case-insensitive); headings inside fenced code blocks or HTML comments do not count;
  - the section runs to the next heading of the same or a higher level, or to the end of the file
    (its sub-sections belong to it);
  - it must hold at least one line of prose. A line is prose when it is not blank, not a heading, not
    inside a fenced code block or an HTML comment, does not start with a placeholder marker (TODO, TBD,
    TBA, TK, FIXME, XXX), and has at least 3 words once URLs and placeholders (TODO, TBD, N/A, none, ...)
    are dropped, a word being a run of two or more letters. A heading alone, a blank line, "TODO",
    "N/A", "-" or "..." is hollow."""

_PLACEHOLDER_WORDS = frozenset({"todo", "tbd", "tba", "tk", "fixme", "xxx", "na", "none", "nil", "null",
                                "placeholder", "wip", "lorem", "ipsum"})
_PLACEHOLDER_START = re.compile(r"^(?:todo|tbd|tba|tk|fixme|xxx)\b", re.IGNORECASE)
_DECORATION = re.compile(r"^(?:\s*(?:>|[-*+]|\d+[.)]|\[[ xX]\])\s*)*")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+", re.IGNORECASE)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_NA = re.compile(r"(?<![^\W\d_])n/a(?![^\W\d_])", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def check(recorder: Path, topic: str, *, branch: str | None = None) -> Verdict:
    """Judge the close of `topic` on the recorder's branch; an invalid topic, recorder or branch gives code 2."""
    try:
        return _judge(Path(recorder), topic, branch)
    except (UsageError, ProcError) as exc:
        return usage(GATE, str(exc))


def _judge(recorder: Path, topic: str, branch: str | None) -> Verdict:
    if not topic:
        raise UsageError("the topic is empty", hint="name the campaign's topic")
    problem = topic_problem(topic)
    if problem:
        raise UsageError(problem)
    if not recorder.is_dir() or not git.is_repo_root(recorder):
        raise UsageError(f"{recorder} is not a git repository",
                         hint="`orchestrate init` creates the recorder; --recorder DIR names another")
    name = _branch(recorder, branch)
    tip = git.rev_parse(recorder, f"refs/heads/{name}")  # None on an unborn branch: no history yet
    rows = git.commit_subjects(recorder, tip, "--first-parent") if tip else []
    t = re.escape(topic)
    opens = [i for i, (_, s) in enumerate(rows) if re.match(rf"log: open {t}(?:\s|$)", s)]
    closes = [i for i, (_, s) in enumerate(rows) if re.match(rf"log: close {t}(?:\s|$)", s)]
    data: dict = {"topic": topic, "branch": name, "open": None, "close": None, "sufficiency": {}}
    items: list[Item] = []
    reasons: list[str] = []

    if opens:
        sha, subject = rows[opens[0]]
        data["open"] = sha
        items.append(Item("PASS", "open", f"{sha[:12]} {subject}"))
    else:
        items.append(Item("FAIL", "open", f"no `log: open {topic}` on branch {name}"))
        reasons.append("never opened")

    close: str | None = None
    if not closes:
        where = f"after the last `log: open {topic}` (at {rows[opens[0]][0][:12]})" if opens else f"on branch {name}"
        items.append(Item("FAIL", "close", f"no `log: close {topic}` {where}"))
        reasons.append("no close entry")
    elif opens and closes[0] > opens[0]:  # newest first: a larger index is older
        items.append(Item("FAIL", "close", f"reopened: `log: open` at {rows[opens[0]][0][:12]} comes after "
                                           f"the last close ({rows[closes[0]][0][:12]})"))
        reasons.append("reopened after its last close")
    else:
        close, subject = rows[closes[0]]
        data["close"] = close
        items.append(Item("PASS", "close", f"{close[:12]} {subject}"))

    prose = 0
    if close is not None:
        found = _reviews(recorder, close)
        data["sufficiency"] = found
        good = {f: n for f, n in found.items() if n}
        prose = max(good.values(), default=0)
        if good:
            items += [Item("PASS", "sufficiency", f"{f}: {n} line(s) of prose") for f, n in good.items()]
        elif found:
            items += [Item("FAIL", "sufficiency", f"Sufficiency Review in {f} is hollow (no line of prose)")
                      for f in found]
            reasons.append("hollow Sufficiency Review")
        else:
            items.append(Item("FAIL", "sufficiency",
                              f"close commit {close[:12]} touches no file with a Sufficiency Review section"))
            reasons.append("no Sufficiency Review")

    if reasons:
        return Verdict(GATE, FAIL, f"FAIL: {topic} is not closed on {name}: " + "; ".join(reasons),
                       tuple(items), data)
    return Verdict(GATE, PASS, f"PASS: {topic} closed on {name} at {close[:12]} with a Sufficiency Review "
                               f"({prose} line(s) of prose)", tuple(items), data)


def _branch(recorder: Path, branch: str | None) -> str:
    if branch is None:
        current = git.head_branch(recorder)
        if current is None:
            raise UsageError(f"the recorder {recorder} has a detached HEAD",
                             hint="name the campaign's recorder branch with --branch")
        return current
    name = branch.removeprefix("refs/heads/")
    if not name or not git.branch_exists(recorder, name):
        known = ", ".join(sorted(r.removeprefix("refs/heads/") for r in git.refs(recorder, "refs/heads/")))
        raise UsageError(f"the recorder has no branch `{branch}`", hint=f"its branches: {known or 'none'}")
    return name


def _reviews(recorder: Path, sha: str) -> dict[str, int]:
    """{file: lines of prose in its best Sufficiency Review section} for each file `sha` touched that has one."""
    found = {}
    for path in git.files_in_commit(recorder, sha):
        text = git.show_file(recorder, sha, path)
        if text is None or "\0" in text:  # deleted by the close, or binary
            continue
        counts = review_sections(text)
        if counts:
            found[path] = max(counts)
    return found


def review_sections(text: str) -> list[int]:
    """The number of prose lines in each Sufficiency Review section of a markdown text (see RULES)."""
    counts: list[int] = []
    level = 0  # the open section's heading level; 0 when outside one
    for kind, depth, content in _blocks(text):
        if kind == "heading":
            if level and depth <= level:
                level = 0
            if not level and " ".join(content.strip("*_` ").split()).casefold().startswith("sufficiency review"):
                level = depth
                counts.append(0)
        elif kind == "text" and level and is_prose(content):
            counts[-1] += 1
    return counts


def _blocks(text: str):
    """(kind, heading level, text) per line: kind is heading, text, or code (fences and HTML comments)."""
    fence: str | None = None
    in_comment = False
    for raw in text.splitlines():
        if fence is not None:
            if re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", raw):
                fence = None
            yield "code", 0, ""
            continue
        line, in_comment = _strip_comments(raw, in_comment)
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            yield "code", 0, ""
            continue
        m = _HEADING.match(line)
        if m:
            title = m.group(2) or ""
            title = "" if re.fullmatch(r"#+", title) else re.sub(r"[ \t]+#+$", "", title)
            yield "heading", len(m.group(1)), title
        else:
            yield "text", 0, line


def _strip_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """The line without HTML comment text, and whether a comment is still open at its end."""
    kept = []
    while line:
        if in_comment:
            end = line.find("-->")
            if end < 0:
                return "".join(kept), True
            line, in_comment = line[end + 3:], False
        else:
            start = line.find("<!--")
            if start < 0:
                kept.append(line)
                break
            kept.append(line[:start])
            line, in_comment = line[start + 4:], True
    return "".join(kept), in_comment


def is_prose(line: str) -> bool:
    """A line that says something: at least 3 words of letters beyond placeholders (see RULES)."""
    body = _DECORATION.sub("", line).strip()
    if not body or _PLACEHOLDER_START.match(body):
        return False
    body = _NA.sub(" ", _URL.sub(" ", _LINK_TARGET.sub("]", body)))
    words = [w for w in _WORD.findall(body) if w.casefold() not in _PLACEHOLDER_WORDS]
    return len(words) >= 3


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(GATE, __doc__ + "\n\n" + RULES, {
        0: "pass: closed after the last open, with a Sufficiency Review of real prose",
        1: "fail: no close, reopened after the close, or a missing or hollow Sufficiency Review",
        2: "usage: an empty or invalid topic, a recorder that is not a git repository, an unknown branch",
    }, prog,
        examples=(
            'orchestrate gate close-check demo .ledger',
            'orchestrate gate close-check --topic demo --recorder .ledger --json',
        ))
    p.add_argument("topic_arg", nargs="?", metavar="TOPIC", help="the campaign's topic (or --topic)")
    p.add_argument("recorder_arg", nargs="?", metavar="RECORDER", help="the recorder directory (or --recorder)")
    p.add_argument("--topic", help="the campaign's topic")
    p.add_argument("--recorder", metavar="DIR", help="the recorder (default: <main worktree>/.ledger)")
    p.add_argument("--branch", metavar="B", help="the campaign's recorder branch (default: its current branch)")
    return gatecli.run_gate(p, argv, lambda args: _decide(p, args))


def _decide(p: argparse.ArgumentParser, args: argparse.Namespace) -> Verdict:
    topic = _one(p, "topic", args.topic_arg, args.topic)
    if topic is None:
        gatecli.usage(p, "a topic is required (TOPIC or --topic)")  # a verdict, so --json prints one too
    recorder = _one(p, "recorder", args.recorder_arg, args.recorder)
    where = Path(recorder) if recorder is not None else git.main_worktree(Path.cwd()) / ".ledger"
    return check(where, topic, branch=args.branch)


def _one(p: argparse.ArgumentParser, what: str, positional: str | None, option: str | None) -> str | None:
    if positional is not None and option is not None and positional != option:
        gatecli.usage(p, f"the {what} is given twice, differently: `{positional}` and --{what} `{option}`")
    return option if option is not None else positional


if __name__ == "__main__":
    raise SystemExit(main())
