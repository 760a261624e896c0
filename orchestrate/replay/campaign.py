"""`orchestrate replay --campaign TOPIC`: re-drive a recorded campaign and check it decides the same.

A scratch clone of the project starts at the recorded baseline with the DAG as it was opened; every
worker is replaced by a stand-in that reproduces the recorded attempt (its tree, exit code, freeze);
recorded human answers are replayed from an answers file. The gate verdicts, merges and seams of the
new run must come out as recorded: this is a regression test of the orchestrator itself.

Under the eager schedule the order in which nodes return is the workers' timing, not a decision, so the
facts are compared node by node (each node's own in order; the seams, and the gates of no node, in
order), with a repeat of the same fact counted once (a pending node's premise is re-checked each time
another node is judged, as often as the timing has it).
"""
from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from orchestrate import git
from orchestrate.errors import UsageError
from orchestrate.workers.worktrees import branch_name

KINDS = ("gate", "verdict", "merge", "seam")


def facts(entries: list[dict]) -> list[tuple]:
    """What a replay must reproduce, in order."""
    out = []
    for e in entries:
        c = e["context"]
        if e["kind"] == "gate":
            out.append(("gate", c.get("node"), c["gate"], c["code"]))
        elif e["kind"] == "verdict":
            out.append(("verdict", c["node"], c["verdict"]))
        elif e["kind"] == "merge":
            out.append(("merge", c["node"]))
        elif e["kind"] == "seam":
            out.append(("seam", c["seam"], c.get("node")))
    return out


_SEAMS = "(seams)"


def _threads(found: list[tuple]) -> dict:
    """Facts by node (the seams in one thread of their own, gates of no node in another), in order, a fact
    repeated back to back kept once."""
    out: dict = {}
    for fact in found:
        seq = out.setdefault(_SEAMS if fact[0] == "seam" else fact[1], [])
        if not seq or seq[-1] != fact:
            seq.append(fact)
    return out


def _journal(ledger: Path, topic: str) -> list[dict]:
    path = ledger / "state" / topic / "journal.jsonl"
    if not path.exists():
        raise UsageError(f"no recorded campaign `{topic}` in {ledger}", hint="check --campaign and --recorder")
    from orchestrate.recorder import damage, segments
    damage.refuse(path, "nothing was replayed")  # a line of another's would be replayed as a recorded fact
    return [json.loads(line) for line in segments.read_bytes(path).splitlines() if line.strip()]


def _heads(entries: list[dict]) -> dict[tuple[str, int], str]:
    """(node, attempt) -> the head the attempt returned, as the journal records it. Its branch is no
    witness: `orchestrate clean` deletes a merged one, and its commits live on in the campaign's branch."""
    attempt: dict[str, int] = {}
    heads: dict[tuple[str, int], str] = {}
    for e in entries:
        c = e["context"]
        if e["kind"] != "node":
            continue
        if "attempt" in c:  # a dispatch, or an undone attempt putting the number back
            attempt[c["node"]] = int(c["attempt"])
        if c.get("head") and "prior" not in c and c["node"] in attempt:  # a return, not an undone attempt
            heads[(c["node"], attempt[c["node"]])] = c["head"]
    return heads


def _plan(repo: Path, topic: str, entries: list[dict]) -> dict:
    """What the stand-in does for node/k: the k-th recorded attempt of the node that returned. An attempt
    cut off by the runner's death has no result (`resume` ran it again as the next attempt), and the
    replay's runs are never cut, so its attempts are numbered as the returned ones alone."""
    heads = _heads(entries)
    runs: dict[tuple[str, int], list] = {}
    for e in entries:
        c = e["context"]
        if e["kind"] == "result" and c.get("effect") == "worker-start":
            runs.setdefault((c["node"], int(c["attempt"])), []).append(
                {"rc": c["rc"], "freeze": c.get("freeze"), "freeze_error": c.get("freeze_error")})
    plan: dict[str, dict] = {}
    ordinal: dict[str, int] = {}
    for (node, attempt), node_runs in sorted(runs.items()):
        ordinal[node] = ordinal.get(node, 0) + 1
        head = heads.get((node, attempt)) or f"refs/heads/{branch_name(topic, node, attempt)}"
        plan[f"{node}/{ordinal[node]}"] = {"runs": node_runs, "tree": _tree(repo, head, node, attempt)}
    return plan


def _tree(repo: Path, head: str, node: str, attempt: int) -> str:
    tree = git.out(repo, "rev-parse", "--verify", "--quiet", f"{head}^{{tree}}", check=False)
    if not tree:
        raise UsageError(f"node {node}'s attempt {attempt} returned {head[:12] if len(head) == 40 else head}, "
                         f"which {repo} no longer holds", hint="replay needs the commits the campaign recorded")
    return tree


def _pin_briefs(dag: dict, brief_dir: str | None, repo: Path, clone: Path) -> None:
    """Each `brief_file` made absolute. It is relative to the folder of the DAG the campaign was opened from
    (its `open` entry records it), and the replay's DAG is written elsewhere, in the clone's recorder. The
    clone's copy at the baseline is preferred; a brief the baseline does not hold is read where it was."""
    if not brief_dir:
        return
    for node in dag.get("nodes", []):
        rel = node.get("brief_file") if isinstance(node, dict) else None
        if not isinstance(rel, str):
            continue
        path = Path(brief_dir) / rel
        try:
            there = clone / path.resolve().relative_to(repo.resolve())
        except ValueError:  # a brief outside the project
            there = None
        node["brief_file"] = str(there if there is not None and there.is_file() else path)


def _project_of(ledger: Path, recorder: Path | None) -> Path:
    """The project whose recorder `ledger` is. A --recorder that is wrong is named as given: the folder
    above it, which git was asked about, is not what the person typed."""
    hint = "--recorder names a project's recorder, the .ledger folder in its checkout"
    if recorder is not None and not ledger.is_dir():
        raise UsageError(f"--recorder {recorder}: no such folder", hint=hint)
    try:
        return git.main_worktree(ledger.parent)
    except UsageError:
        if recorder is None:
            raise
        raise UsageError(f"--recorder {recorder}: not in a git repository's checkout", hint=hint) from None


def replay_campaign(cwd: Path, topic: str, recorder: Path | None, out=None) -> int:
    out = out or sys.stdout
    from orchestrate.engine.runner import run_campaign
    from orchestrate.recorder.init import init_project
    from orchestrate.recorder.locate import checkout
    ledger = (recorder or checkout(cwd) / ".ledger").resolve()  # checkout: a bare repository is named as one
    repo = _project_of(ledger, recorder)
    recorded = _journal(ledger, topic)
    opened = next((e["context"] for e in recorded if e["kind"] == "open"), None)
    if opened is None:
        raise UsageError(f"campaign `{topic}` was never opened in {ledger}")
    dag_rel = f"state/{topic}/dag.yaml"
    first = git.lines(ledger, "log", "--reverse", "--format=%H", "--", dag_rel)
    if not first:
        raise UsageError(f"the recorder holds no DAG for `{topic}`")
    dag = yaml.safe_load(git.show_file(ledger, first[0], dag_rel))
    scratch = Path(tempfile.mkdtemp(prefix="orchestrate-run-replay-"))
    try:
        clone = scratch / "repo"
        git.git(scratch, "clone", "--quiet", "--no-hardlinks", str(repo), str(clone))
        git.git(clone, "switch", "--quiet", "-C", "replay-baseline", opened["baseline"])
        plan_file = clone / ".scratch" / "replay" / "plan.json"  # inside the project: a sandboxed worker sees it
        plan_file.parent.mkdir(parents=True)
        plan = _plan(repo, topic, recorded)
        plan_file.write_text(json.dumps(plan))
        command = f"{shlex.quote(sys.executable)} -m orchestrate.replay.stand_in {shlex.quote(str(plan_file))}"
        dag["base"] = opened["baseline"]
        dag["topic"] = f"{topic}-replay"
        for node in dag.get("nodes", []):
            node["worker"] = command
        _pin_briefs(dag, opened.get("brief_dir"), repo, clone)
        init_project(clone)  # the recorded node commits stay reachable through the clone's origin/* refs
        dag_file = clone / ".ledger" / "state" / "dag.yaml"
        dag_file.write_text(yaml.safe_dump(dag, sort_keys=False))
        answers = scratch / "answers.yaml"
        queued: dict[str, list] = {}
        for e in recorded:
            if e["kind"] == "decision" and e.get("source_type") not in ("policy",) and e["context"]["seam"] != "final-acceptance":
                queued.setdefault(e["context"]["seam"], []).append({"choice": e["context"]["choice"],
                                                                   "note": e["context"].get("note") or ""})
        answers.write_text(yaml.safe_dump(queued))
        said = io.StringIO()
        with contextlib.redirect_stdout(said):  # the inner run's own report is not the replay's
            run_campaign(clone, None, topic=None, mode=None, jobs=opened.get("jobs") or 1, quiet=True,
                         answers=answers, schedule=opened.get("schedule", "layered"))
        if not (clone / ".ledger" / "state" / f"{topic}-replay" / "journal.jsonl").exists():
            # halted before it opened (an invalid DAG, say): what it said is the reason, not the missing journal
            lines = said.getvalue().strip().splitlines() or ["(it said nothing)"]
            raise UsageError(f"the replay of campaign {topic} stopped before it opened, in a scratch clone at "
                             f"the baseline (since removed); it said:\n" + "\n".join(f"  {ln}" for ln in lines))
        replayed = _journal(clone / ".ledger", f"{topic}-replay")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    want, got = facts(recorded), facts(replayed)
    mine, theirs = _threads(want), _threads(got)
    for key in list(mine) + [k for k in theirs if k not in mine]:
        a, b = mine.get(key, []), theirs.get(key, [])
        whose = "the seams" if key == _SEAMS else "the boundaries" if key is None else f"node {key}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"replay of campaign {topic} diverges at fact {i + 1} of {whose}: recorded {x}, replayed {y}",
                      file=out)
                return 1
        if len(a) != len(b):
            extra = a[len(b)] if len(a) > len(b) else b[len(a)]
            print(f"replay of campaign {topic} diverges after {min(len(a), len(b))} facts of {whose}: "
                  f"{'the replay stopped before' if len(a) > len(b) else 'the replay went on with'} {extra}", file=out)
            return 1
    counts = {k: sum(1 for f in want if f[0] == k) for k in KINDS}
    print(f"replay of campaign {topic} matches: {counts['gate']} gate verdict(s), {counts['verdict']} verdict(s), "
          f"{counts['merge']} merge(s), {counts['seam']} seam(s)", file=out)
    return 0

