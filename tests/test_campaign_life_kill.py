"""A runner killed at a random instant (fixed seed) while two other topics run: resuming all three ends
each campaign as it would have ended alone."""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest

from tests.engine_helpers import campaign_repo, statuses

ORCH = [sys.executable, "-c", "import sys; from orchestrate.cli.main import main; sys.exit(main())"]
WORKER = r"""#!/bin/sh
set -eu
sleep 0.2
d="$ORCH_TOPIC/$(echo "$ORCH_NODE" | tr A-Z a-z)"
mkdir -p "$d" && echo "$ORCH_TOPIC $ORCH_NODE" > "$d/one.txt" && git add -A && git commit -qm "$ORCH_NODE"
"""
TOPICS = ("k1", "k2", "k3")


def _dag(topic: str) -> str:
    return (f"topic: {topic}\nworkers: {{sh: \"./work.sh\"}}\ndefaults: {{max_attempts: 2, timeout: 60}}\n"
            "checks: [{name: tree, run: \"test -d " + topic + "\"}]\nnodes:\n"
            + "".join(f"  - {{id: {n}, title: {n.lower()}, depends_on: [{d}], file_surface: [{topic}/{n.lower()}/],"
                      f" discipline: sh}}\n" for n, d in (("A", ""), ("B", ""), ("C", "A"), ("D", "C"))))


def _after_transitions(repo, topic: str, n: int, runner, timeout: float = 120.0) -> None:
    """Until the campaign's journal holds `n` transitions (or its runner has ended)."""
    from orchestrate.recorder import segments
    journal = repo / ".ledger" / "state" / topic / "journal.jsonl"
    end = time.monotonic() + timeout
    while time.monotonic() < end and runner.poll() is None:
        if n == 0 or segments.read_bytes(journal).count(b'"kind":"transition"') >= n:
            return
        time.sleep(0.02)


def _statuses(repo, orch, topic: str) -> dict[str, str]:
    """As `status --json` says, or {} for a topic whose campaign was never opened."""
    shown = orch("status", "--json", "--topic", topic, cwd=repo)
    return statuses(repo, orch, topic) if shown.out.strip() else {}


def _tree(repo, topic: str) -> dict[str, str]:
    names = repo.git("ls-tree", "-r", "--name-only", f"campaign/{topic}", "--", topic).split()
    return {n: repo.git("show", f"campaign/{topic}:{n}") for n in names}


@pytest.mark.parametrize("seed", [4, 7, 17])
def test_a_runner_killed_at_random_while_two_others_run_resumes_to_the_same_end(tmp_path, orch, seed):
    rng = random.Random(seed)
    repo = campaign_repo(tmp_path, _dag("k1"), WORKER)
    for t in TOPICS[1:]:
        (repo / f"{t}.yaml").write_text(_dag(t))
    dags = {"k1": repo / ".ledger" / "state" / "dag.yaml", "k2": repo / "k2.yaml", "k3": repo / "k3.yaml"}
    runners = {t: subprocess.Popen(ORCH + ["run", "--no-interactive", "--jobs", "2", "--dag", str(dags[t])],
                                   cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for t in TOPICS}
    victim = TOPICS[rng.randrange(3)]
    _after_transitions(repo, victim, rng.randrange(0, 16), runners[victim])  # progress, not wall time: a slow
    time.sleep(rng.uniform(0.0, 0.4))                                        # machine still kills mid-run
    runners[victim].send_signal(signal.SIGKILL)
    ends = {t: r.wait(timeout=300) for t, r in runners.items()}
    for t, r in runners.items():
        err = r.stderr.read()
        r.stderr.close()
        assert "Traceback" not in err, (t, err)
        if t != victim:
            assert ends[t] == 75, (t, err)  # the others went on to final acceptance, untouched
    for t in TOPICS:
        for _ in range(3):
            if _statuses(repo, orch, t) == dict.fromkeys("ABCD", "ACCEPTED"):
                break
            r = orch("resume", "--no-interactive", "--topic", t, cwd=repo)
            if "was never opened" in r.err or f"no campaign `{t}`" in r.err:
                assert r.rc == 2  # killed in DERIVE: nothing to resume, so it starts again
                r = orch("run", "--no-interactive", "--dag", dags[t], cwd=repo)
            assert r.rc in (0, 75) and "Traceback" not in r.err, (t, r.out, r.err)
        assert statuses(repo, orch, t) == dict.fromkeys("ABCD", "ACCEPTED"), t
        assert _tree(repo, t) == {f"{t}/{n}/one.txt": f"{t} {n.upper()}" for n in "abcd"}
        assert orch("doctor", "--topic", t, cwd=repo).rc == 0, t
