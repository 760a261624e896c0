"""What happens when a worker attempt ends: its result journalled, leftovers committed, what git does not track
removed, freeze read, status set."""
from __future__ import annotations

import json
import os
from pathlib import Path

from orchestrate import git, git_files
from orchestrate.errors import GitError
from orchestrate.workers import containment, converted, pool, siblings, unread, untracked
from orchestrate.workers.brief import outputs_path, usage_path
from orchestrate.workers.private_objects import BadObject
from orchestrate.recorder.campaign import LANDED


def returned(ctx, outcome, *, journal_result: bool = True) -> None:
    """Settle one finished attempt; `journal_result` is False when resume found the result already journalled."""
    if journal_result:
        ctx.emit("result", {"effect": "worker-start", "node": outcome.node, "attempt": outcome.attempt,
                            "rc": outcome.rc, "timed_out": outcome.timed_out, "seconds": round(outcome.seconds, 3),
                            "log": outcome.log, "freeze": outcome.freeze, "freeze_error": outcome.freeze_error,
                            **reported_usage(ctx, outcome), **reported_outputs(ctx, outcome)},
                 source_entity=f"worker:{outcome.node}", source_type="worker")
    trespass = siblings.check(ctx, outcome.node)  # first: other worktrees are put back before anything reads them
    _settle(ctx, outcome)
    if trespass:
        fail_attempt(ctx, outcome, ctx.campaign.nodes[outcome.node].head, trespass)


def _head(root: Path, worktree: Path) -> str:
    """What `git rev-parse HEAD` says in the worktree, read from its HEAD file where that is plain."""
    try:
        return git_files.worktree_head(root, worktree)
    except git_files.Unusable:
        return git.out(worktree, "rev-parse", "HEAD")


def _foreign_head(worktree: Path, branch: str, common: Path) -> str | None:
    """What the worktree's HEAD names when it is neither the node's branch nor a commit (detached): a worker
    can write HEAD in its worktree's admin dir, in the sandbox too."""
    try:
        text = git_files.small(git.admin_dir(worktree) / "HEAD").decode(errors="replace").strip()
    except (OSError, TypeError):
        return "something unreadable"
    if git_files.is_full_id(text):
        return None
    if text == f"ref: refs/heads/{branch}":
        return _symbolic(common, branch)
    return text.removeprefix("ref: ") or "nothing"


def _symbolic(common: Path, branch: str) -> str | None:
    """What the branch's ref names when it is not a commit (rv36: a worker without the sandbox can make its own
    branch's ref file `ref: refs/heads/main`, and the leftovers' commit through HEAD would move your branch). A
    packed ref is always a commit; a ref file that is a link, git takes for a symbolic ref too."""
    try:
        text = git_files.small(common / "refs" / "heads" / branch).decode(errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError:
        return f"{branch} (its ref file is not a plain file)"
    return None if git_files.is_full_id(text) else f"{branch} (its ref names {text.removeprefix('ref: ') or 'nothing'})"


def _hidden(path: Path, base: str, head: str) -> str:
    """Why the worktree is not what `head` holds though the worker's index says it is ('' when it is): read
    against orchestrate's own copy of the index (pool.unseen); for a worktree an earlier runner made, which
    has none, the index flags that hide a file (a lower-case tag: assume-unchanged; `S`: skip-worktree)."""
    try:
        found = pool.unseen(path, base, head)
    except GitError as exc:
        return f"its worktree could not be compared with its head commit ({exc.said()})"
    except OSError as exc:  # where orchestrate copies its index, something it cannot replace
        return f"its worktree could not be compared with its head commit ({exc.strerror or exc})"
    if found is None:
        found = [entry[2:] for entry in git.git(path, "ls-files", "-v", "-z").stdout.split("\0")
                 if entry[:1].islower() or entry[:1] == "S"]
    if found:
        found = _not_only_converted(path, head, found)
    if not found:
        return ""
    named = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return (f"the worktree holds {named} other than its head commit does, though the worker's index says not (a "
            "flag, stat data that matches, or a cache of untracked files): its evaluators would read what is "
            "never merged")


def _not_only_converted(path: Path, head: str, names: list[str]) -> list[str]:
    """`names` less the files that, cleaned as git cleans them for a commit, are `head`'s blobs: under `* text=auto`
    a file differing only by CRLF is told changed by its size alone, and `git add -A` then stages nothing (rv33).
    Such a file is written anew before judging (converted.py); none of it is hidden from the merge."""
    files = [name for name in names if os.path.isfile(path / name) and "\ufffd" not in name]
    if not files:
        return names
    cleaned = git.git(path, "hash-object", "--stdin-paths", input="".join(n + "\n" for n in files), check=False)
    held = git.git(path, "ls-tree", "-z", "--full-tree", head, "--", *files, check=False)
    if not cleaned or not held:
        return names
    blobs = {entry.partition("\t")[2]: entry.split(" ")[2].partition("\t")[0]
             for entry in held.stdout.split("\0") if entry.count(" ") >= 2}
    same = {name for name, blob in zip(files, cleaned.stdout.split()) if blobs.get(name) == blob}
    return [name for name in names if name not in same]


def _settle(ctx, outcome) -> None:
    """The attempt's own worktree: objects brought in, leftovers committed, head read, the rest removed, freeze or
    LANDED."""
    ns = ctx.campaign.nodes[outcome.node]
    path = ctx.root / ns.worktree
    if path.exists() and not git_files.linked(path, git.git_common_dir(ctx.root)):
        # every git call below would act on the repository its .git file now names (the user's, say): none runs
        pool.discard(ctx.root, path)
        pool.forget(path)
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: the worker rewrote its worktree's .git link "
                     "(it no longer names this repository's admin dir for it); nothing was read or committed "
                     "through it, the worktree was removed, and its attempt failed")
        return
    if path.exists() and (named := _foreign_head(path, ns.branch, git.git_common_dir(ctx.root))):
        # a commit made here (the leftovers', below) would move what HEAD names: the user's branch, say
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: the worker pointed its worktree's HEAD at "
                     f"{named}, not its branch {ns.branch}; nothing was committed or read through it, and its "
                     "attempt failed")
        return
    if ns.objects and path.exists():  # a sandboxed attempt: its objects are its own until brought in
        try:
            containment.settle(ctx, ns)
        except BadObject as exc:
            fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: {exc.message}; its attempt failed")
            return
    lock = _index_lock(path)
    if lock is not None:  # git would refuse every call here; the attempt failed, the run goes on
        lock.unlink(missing_ok=True)
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: the worker left git's index.lock behind "
                "(a git command it started was killed or is still running); its attempt failed")
        return
    try:
        wrong = pool.scrub_admin(path) if path.exists() else ""
    except OSError as exc:
        wrong = f"its worktree's git admin dir could not be cleared ({exc.strerror or exc})"
    if wrong:
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: {wrong}; nothing was read or committed "
                     "there, and its attempt failed")
        return
    head, clean = _first_look(ctx.root, path, ns.base) if path.exists() else (ns.base, True)
    if not clean:
        if not _commit_leftovers(ctx, outcome, path):
            return
        head = _head(ctx.root, path)
    if head != ns.base and not git.is_ancestor(ctx.root, ns.base, head):
        fail_attempt(ctx, outcome, head, f"node {outcome.node}: its head {head[:12]} does not contain its base "
                f"{ns.base[:12]} (the branch was reset or replaced); its attempt failed")
        return
    if not clean and path.exists() and (hidden := _hidden(path, ns.base, head)):
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: {hidden}; its attempt failed")
        return
    if path.exists() and (wrong := _cleared(ctx, path, ns.base, head, owned=clean)):
        fail_attempt(ctx, outcome, ns.base, f"node {outcome.node}: {wrong}; its attempt failed")
        return
    if ns.objects and head != ns.base:
        # the branch is moved here only: at its base, or (an attempt resumed after a widening) at the head its
        # freeze returned, which the resumed worker built on; else MERGE refuses the judged head as moved (rv75)
        at = git.rev_parse(ctx.root, ns.branch)
        if at != head and (at == ns.base or (at == ns.head and git.is_ancestor(ctx.root, at, head))):
            git.update_ref(ctx.root, f"refs/heads/{ns.branch}", head, at, reason=f"node {outcome.node} returned")
    update = {"node": outcome.node, "head": head, "rc": outcome.rc, "log": outcome.log,
              "seconds": round(ns.seconds + outcome.seconds, 3)}
    if outcome.freeze_error:
        ctx.out.line(f"{outcome.node}: malformed freeze file: {outcome.freeze_error}")
        update.update(status=LANDED, rc=2, feedback=f"node {outcome.node}: malformed freeze file: "
                      f"{outcome.freeze_error}")
    elif outcome.freeze:
        update.update(freeze=outcome.freeze)
        ctx.out.line(f"{outcome.node}: froze ({outcome.freeze['freeze']})")
    else:
        update.update(status=LANDED)
        how = "timed out" if outcome.timed_out else f"exited {outcome.rc}"
        ctx.out.line(f"{outcome.node}: worker {how} after {outcome.seconds:.1f}s")
    ctx.emit("node", update)


def _first_look(root: Path, worktree: Path, base: str) -> tuple[str | None, bool]:
    """(HEAD's commit, True) when the worktree holds exactly that commit, nothing left uncommitted and nothing
    hidden, as orchestrate's own index sees it (pool.unseen): the common case, two git processes. False:
    a closer look is needed (leftovers to commit, no index of orchestrate's, an odd HEAD)."""
    try:
        head = _head(root, worktree)
        # a file a clean filter converts is not passed over here: changed, it is a leftover to commit
        return head, pool.unseen(worktree, base, head, pass_converted=False, install=True) == []
    except (GitError, OSError):
        return None, False


def cleared_again(ctx, path: Path, base: str, head: str) -> str:
    """The worktree put back to its head commit alone after its evaluators ran the worker's code there, for the
    gates that read it next (coherence's evaluators, gate plugins): what an evaluator rewrote (`echo clean >
    src.txt`) would have been what they judged, and the commit what was merged (rv36). Why it could not be.
    That code could write the worktree's `.git` and admin dir too, so neither is followed before it is checked
    (the worker's return checked both before the first `_cleared`)."""
    if not git_files.linked(path, git.git_common_dir(ctx.root)):  # (rv57) every git call in `_cleared` would act
        # where it names now: the user's index, a `core.worktree` anywhere on disk
        return ("its worktree's .git link was rewritten (it no longer names this repository's admin dir for it); "
                "nothing was read or written through it")
    try:  # git writes an index through a link: one to the user's would be written by `own_index` (rv68)
        if wrong := pool.scrub_admin(path):
            return f"its worktree could not be made to hold its commit alone ({wrong})"
    except OSError as exc:
        return f"its worktree's git admin dir could not be cleared ({exc.strerror or exc})"
    return _cleared(ctx, path, base, head)


def _cleared(ctx, path: Path, base: str, head: str, owned: bool = False) -> str:
    """The worktree left holding its head commit alone, as its evaluators are to judge it: its index made
    orchestrate's own at `head`, then what git does not track removed (bytecode the worker left in an ignored
    __pycache__/ is loaded in place of the committed source; an ignored conftest.py is read by pytest), unless
    `keep_ignored` trusts workers with ignored files, and what a conversion hid written anew (converted.py). `owned`:
    the first look made the index so already. Why it could not be ('' when it was)."""
    try:
        if not owned:
            pool.own_index(path, base, head)
        untracked.clear(path, head, containment.keeps_ignored(ctx))
        converted.rewrite(path, head, ctx.root)
    except GitError as exc:
        return f"its worktree could not be made to hold its commit alone ({exc.said()})"
    except (OSError, ValueError) as exc:
        return f"its worktree could not be made to hold its commit alone ({getattr(exc, 'strerror', None) or exc})"
    return ""


def _commit_leftovers(ctx, outcome, path: Path) -> bool:
    """Commit what the worker left uncommitted, as its own index sees it; False when the attempt failed."""
    try:  # what git passed over (a folder it could not open), `git add -A` would not commit either
        left = bool(unread.checked(git.status(path), path))
    except GitError as exc:  # an index git cannot read, a folder it cannot open (a worker's doing): the attempt
        fail_attempt(ctx, outcome, ctx.campaign.nodes[outcome.node].base, f"node {outcome.node}: git could not "
                     f"read its worktree ({exc.said()}); its attempt failed")
        return False
    if not left:
        return True
    ctx.emit("intent", {"effect": "leftover-commit", "node": outcome.node})
    try:
        git.commit_all(path, f"node {outcome.node}: changes left uncommitted by the worker", env=git.identity_env(path))
    except GitError as exc:  # e.g. a nested repository with no commit: git cannot add it; the run goes on
        if "nothing to commit" in exc.stdout + exc.stderr:  # what status told changed cleans to the same blobs
            return True
        fail_attempt(ctx, outcome, ctx.campaign.nodes[outcome.node].base, f"node {outcome.node}: git could not "
                     f"commit what the worker left uncommitted ({exc.said()}); its attempt failed")
        return False
    ctx.emit("result", {"effect": "leftover-commit", "node": outcome.node})
    ctx.out.line(f"{outcome.node}: committed changes the worker left uncommitted")
    return True


def _index_lock(worktree: Path) -> Path | None:
    """The worktree's index.lock, when one was left behind (its admin dir is named by the `.git` file)."""
    dot = worktree / ".git"
    if not dot.is_file():
        return None
    text = dot.read_text(errors="replace").strip()
    admin = Path(text.removeprefix("gitdir: "))
    lock = (admin if admin.is_absolute() else worktree / admin) / "index.lock"
    return lock if lock.exists() else None


def fail_attempt(ctx, outcome, head: str, why: str) -> None:
    """A failed attempt the gates never see: reported against the node, judged as a non-zero exit."""
    ns = ctx.campaign.nodes[outcome.node]
    ctx.out.line(why)
    ctx.emit("node", {"node": outcome.node, "head": head, "rc": 2, "log": outcome.log, "status": LANDED,
                      "feedback": why, "seconds": round(ns.seconds + outcome.seconds, 3)})


REPORT_MOST = 1 << 20  # bytes of $ORCH_USAGE read
OUTPUTS_MOST = 64 << 10  # bytes of $ORCH_OUTPUTS read: values for edge conditions, not documents
USAGE_KEYS = {"input_tokens": int, "output_tokens": int, "cost_usd": (int, float), "model": str}
USAGE_MOST = 10 ** 15  # a reported token count or dollar amount above this is a lie, not a bill (rv79)
MODEL_MOST = 200  # characters of a reported model name: it is journalled, and shown in every report (rv79)


def _strict_json(raw: bytes | str):
    """JSON as RFC 8259 has it: NaN and Infinity (which Python's parser takes) are refused, and so is nesting
    too deep for the parser (a RecursionError otherwise), each as a ValueError (rv79)."""
    def refuse(name: str):
        raise ValueError(f"{name} is not a JSON number")
    try:
        return json.loads(raw, parse_constant=refuse)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def run_dir(ctx, node_id: str) -> Path:
    """The node's run folder, where its brief names $ORCH_RETURN, $ORCH_USAGE and $ORCH_OUTPUTS (a person's
    attempt has no log to find it by)."""
    return ctx.layout.runs(ctx.topic) / node_id


def reported_usage(ctx, outcome) -> dict:
    """{"usage": {...}} from the attempt's $ORCH_USAGE file, {"usage_error": why} for a malformed one (a warning
    against the node, never a failed attempt: usage is bookkeeping, not evidence), {} when none was written."""
    path = usage_path(run_dir(ctx, outcome.node), outcome.attempt)
    try:
        usage = _strict_json(git_files.small(path, REPORT_MOST))["usage"]  # no link followed, no FIFO waited on
        clean = {k: usage[k] for k in USAGE_KEYS if k in usage}
        bad = [k for k, v in clean.items() if not isinstance(v, USAGE_KEYS[k]) or isinstance(v, bool)
               or (k != "model" and not 0 <= v <= USAGE_MOST)  # a huge int would overflow the sums (rv79)
               or (k == "model" and len(v) > MODEL_MOST)]
        if not isinstance(usage, dict) or bad or not clean:
            raise ValueError(f"bad {', '.join(bad)}" if bad else "no known key")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"{path.name}: expected {{\"usage\": {{\"input_tokens\": N, \"output_tokens\": N, \"cost_usd\": X, " \
              f"\"model\": \"...\"}}}} ({type(exc).__name__}: {exc})"
        ctx.out.line(f"{outcome.node}: warning: malformed usage file {why}")
        return {"usage_error": why}
    return {"usage": clean}


def reported_outputs(ctx, outcome) -> dict:
    """For a node that declares outputs: {"outputs_reported": what its $ORCH_OUTPUTS file held as the worker
    left it}, journalled now and judged from the journal (`read_outputs`). Read when its worker returns, not
    when it is judged: a worker without the sandbox that runs meanwhile can write another node's run folder."""
    node = ctx.dag.by_id.get(outcome.node) if ctx.dag else None
    if node is None or not node.outputs:
        return {}
    return {"outputs_reported": read_outputs(outputs_path(run_dir(ctx, outcome.node), outcome.attempt), node.outputs)}


def read_outputs(path: Path, declared: list[str]) -> dict:
    """{"values": the declared keys it holds, "sha256": of the whole file}, {"absent": True} when there is no
    file, or {"error": why} (not a plain file, too long, not UTF-8, not JSON, not an object). Only declared keys
    are kept: the journal and the recorder's history keep what edges read, nothing else the file held."""
    try:
        raw = git_files.small(path, OUTPUTS_MOST + 1)  # no link followed, no FIFO waited on
    except FileNotFoundError:
        return {"absent": True}
    except OSError as exc:
        return {"error": f"{path.name}: {exc.strerror or exc}"}
    if len(raw) > OUTPUTS_MOST:
        return {"error": f"{path.name} holds more than {OUTPUTS_MOST} bytes (outputs are values for conditions)"}
    try:
        data = _strict_json(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return {"error": f"{path.name} is not UTF-8: {exc}"}
    except ValueError as exc:
        return {"error": f"{path.name} is not JSON: {exc}"}
    if not isinstance(data, dict):
        return {"error": f"{path.name} must hold a JSON object {{key: value}}"}
    import hashlib
    return {"values": {k: data[k] for k in declared if k in data}, "sha256": hashlib.sha256(raw).hexdigest()}


# The shell's codes for a command it could not find (127) or not execute (126), and EX_UNAVAILABLE (69),
# which the coding-agent presets exit with after an `orchestrate: ` line when the agent is missing or not
# logged in. None of them says anything about the work: they are the environment's, never an attempt.
CANNOT_START = (126, 127)
AGENT_UNAVAILABLE = 69
AGENT_PREFIX = "orchestrate: "
# bubblewrap's own exit code when it cannot set the sandbox up (a bind, its chdir into the worktree): it then
# says why in lines of its own and nothing else runs, so exit 1 with no other line is a worker never started
SANDBOX_FAILED, SANDBOX_PREFIX = 1, "bwrap: "


def environment_error(rc: int | None, log: str) -> str:
    """Why the environment, not the worker, ended this attempt (naming the command and the line that
    says so), or "" when the attempt ran and its exit code is a verdict on its work."""
    if rc not in CANNOT_START and rc not in (AGENT_UNAVAILABLE, SANDBOX_FAILED):
        return ""
    try:  # the header orchestrate wrote first, and what the worker printed last (a log can be any size)
        head = git_files.small(log, 4096).decode(errors="replace").splitlines()[:1] if log else []
        lines = head + git_files.tail(log, REPORT_MOST).decode(errors="replace").splitlines()[1:] if log else []
    except OSError:
        head, lines = [], []
    header = next((ln for ln in head if ln.startswith("# orchestrate: node ")), "")
    command = header.split(": ", 2)[2] if header.count(": ") >= 2 else "?"
    body = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("# orchestrate: ")]
    if rc == SANDBOX_FAILED:  # only this run's lines: the log of an attempt run again (after a rework) holds both
        last = max((i for i, ln in enumerate(lines) if ln.startswith("# orchestrate: node ")), default=-1)
        ours = [ln.strip() for ln in lines[last + 1:] if ln.strip() and not ln.startswith("# orchestrate: ")]
        said = ours[-1] if ours and all(ln.startswith(SANDBOX_PREFIX) for ln in ours) else ""
        return f"the sandbox could not start the worker `{command}` (exit 1): {said}" if said else ""
    if rc == AGENT_UNAVAILABLE:
        said = next((ln for ln in body if ln.startswith(AGENT_PREFIX)), "")
        return f"the worker `{command}` cannot work here (exit 69): {said}" if said else ""
    how = "was not found" if rc == 127 else "could not be executed"
    said = next((ln for ln in reversed(body) if any(w in ln.lower() for w in (
        "not found", "no such file", "permission denied", "cannot start", "cannot execute"))), "")
    return f"the worker command `{command}` {how} (exit {rc})" + (f": {said}" if said else "")
