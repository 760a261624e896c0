"""The eager schedule against the layered one, read from the journal's order (never from timing)."""
from __future__ import annotations

import json

import pytest

from tests.engine_helpers import campaign_repo, journal, statuses

# S is slow until it sees C's brief (or, under the layered barrier where C cannot start before S returns,
# until its short limit runs out); B is quick and C depends on B only.
WAITER = r"""#!/bin/sh
set -eu
case "$ORCH_NODE" in
  S) n=0
     while [ ! -f "$RUNS/C/brief-1.md" ] && [ "$n" -lt "$(cat limit.txt)" ]; do sleep 0.05; n=$((n + 1)); done
     mkdir -p s && echo S > s/one.txt ;;
  B) mkdir -p b && echo B > b/one.txt ;;
  C) mkdir -p c && echo C > c/one.txt ;;
esac
"""

ORDER_DAG = """\
topic: eager
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 120}}
nodes:
  - {{id: S, title: slow, file_surface: [s/], discipline: sh,
     evaluators: [{{name: waited, run: "test -f s/one.txt"}}]}}
  - {{id: B, title: quick, file_surface: [b/], discipline: sh}}
  - {{id: C, title: after quick, depends_on: [B], file_surface: [c/], discipline: sh}}
"""


def _index(entries: list[dict], pred) -> int:
    return next(i for i, e in enumerate(entries) if pred(e))


def _dispatched(node: str):
    return lambda e: e["kind"] == "node" and e["context"].get("node") == node \
        and e["context"].get("status") == "DISPATCHED"


def _returned(node: str):
    return lambda e: e["kind"] == "result" and e["context"].get("effect") == "worker-start" \
        and e["context"].get("node") == node and "rc" in e["context"]


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_dependent_starts_before_an_unrelated_slow_node_returns_only_when_eager(tmp_path, orch, schedule):
    worker = WAITER.replace("$RUNS", str(tmp_path / "repo" / ".scratch" / "runs" / "eager"))
    # eager: S waits (up to 2400 polls) for C, which must start while S runs; layered: C cannot, so S gives up soon
    limit = "2400" if schedule == "eager" else "4"
    # the layered run's DAG says eager: --schedule overrides it, and the campaign keeps what it opened with
    repo = campaign_repo(tmp_path, ORDER_DAG.format(schedule="eager"), worker, files={"limit.txt": limit + "\n"})
    result = orch("run", "--jobs", "2", "--schedule", schedule, cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "eager")
    assert next(e for e in entries if e["kind"] == "open")["context"]["schedule"] == schedule
    c_starts, s_returns = _index(entries, _dispatched("C")), _index(entries, _returned("S"))
    if schedule == "eager":
        assert c_starts < s_returns  # C branched from the head B's merge made, while S still ran
        c_base = next(e for e in entries if _dispatched("C")(e))["context"]["base"]
        b_merge = next(e for e in entries if e["kind"] == "merge" and e["context"]["node"] == "B")["context"]["sha"]
        assert c_base == b_merge
    else:
        assert s_returns < c_starts
    assert statuses(repo, orch, "eager") == {"S": "ACCEPTED", "B": "ACCEPTED", "C": "ACCEPTED"}
    tree = repo.git("ls-tree", "-r", "--name-only", "campaign/eager").split()
    assert {"s/one.txt", "b/one.txt", "c/one.txt"} <= set(tree)


def test_a_bad_schedule_is_one_line_naming_the_choices(tmp_path, orch):
    repo = campaign_repo(tmp_path, ORDER_DAG.format(schedule="eager").replace("schedule: eager\n", "schedule: soon\n"),
                         "#!/bin/sh\n")
    bad = orch("validate", cwd=repo)
    assert bad.rc == 1
    assert "`soon` is not a schedule" in bad.out + bad.err
    assert "Traceback" not in bad.out + bad.err


# Each node asks once for one more path; what it asks for decides WIDEN (no concurrent surface claims it)
# or SERIALIZE (a concurrent node's surface covers it). Granted, it writes the path and its own file.
FREEZER = r"""#!/bin/sh
set -eu
want=$(cat "ask-$ORCH_NODE.txt")
case "$want" in "$ORCH_NODE"/*) granted=yes ;; *) granted=no ;; esac
if [ "$granted" = yes ] || printf '%s\n' "$ORCH_SURFACE" | grep -qx "$want"; then
  mkdir -p "$(dirname "$want")" "$ORCH_NODE" && echo "$ORCH_NODE" > "$want" && echo x > "$ORCH_NODE/own.txt"
  git add -A && git commit -qm "$ORCH_NODE"
else
  printf '{"freeze": "surface-exceed", "paths": ["%s"]}' "$want" > "$ORCH_RETURN"
fi
"""

FREEZE_DAG = """\
topic: freeze
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, max_attempts: 2}}
nodes:
  - {{id: X, title: x, file_surface: [X/], discipline: sh}}
  - {{id: Y, title: y, file_surface: [Y/], discipline: sh}}
  - {{id: Z, title: z, file_surface: [Z/], discipline: sh}}
  - {{id: W, title: w, file_surface: [W/], discipline: sh}}
  - {{id: V, title: after all, depends_on: [X, Y, Z, W], file_surface: [V/], discipline: sh}}
"""

ASKS = {  # node -> the path it asks for; None: it does not freeze (it asks for what it already has)
    "two": {"X": "x-extra.txt", "Y": "W/from-y.txt", "Z": "Z/own.txt", "W": "W/own.txt", "V": "V/own.txt"},
    "three": {"X": "x-extra.txt", "Y": "W/from-y.txt", "Z": "z-extra.txt", "W": "W/own.txt", "V": "V/own.txt"},
}


@pytest.mark.parametrize("schedule", ["eager", "layered"])
@pytest.mark.parametrize("mix", ["two", "three"])
def test_several_surface_exceed_freezes_in_one_layer_end_correctly(tmp_path, orch, schedule, mix):
    asks = ASKS[mix]
    repo = campaign_repo(tmp_path, FREEZE_DAG.format(schedule=schedule), FREEZER,
                         files={f"ask-{n}.txt": p + "\n" for n, p in asks.items()})
    result = orch("run", "--jobs", "4", cwd=repo)
    assert result.rc == 75, result.out + result.err
    assert "final-acceptance" in result.out
    assert statuses(repo, orch, "freeze") == {n: "ACCEPTED" for n in asks}
    entries = journal(repo, "freeze")
    verdicts = {e["context"]["node"]: e["context"]["code"] for e in entries
                if e["kind"] == "gate" and e["context"].get("gate") == "collision-check"}
    frozen = {n for n, p in asks.items() if p != f"{n}/own.txt"}
    assert set(verdicts) == frozen
    assert verdicts["Y"] != 0  # W's surface covers what Y asked for: serialized
    assert all(verdicts[n] == 0 for n in frozen - {"Y"})  # nothing concurrent claims these: widened
    tree = set(repo.git("ls-tree", "-r", "--name-only", "campaign/freeze").split())
    assert {p for p in asks.values()} <= tree
    # the serialized node ran alone: nothing else was in flight between its start and its merge
    y_start = _index(entries, _dispatched("Y"))
    later = [i for i, e in enumerate(entries) if _dispatched("Y")(e)][-1]
    y_merge = _index(entries, lambda e: e["kind"] == "merge" and e["context"]["node"] == "Y")
    assert y_start <= later < y_merge
    others = [e for e in entries[later:y_merge] if e["kind"] == "node" and e["context"].get("status") == "DISPATCHED"
              and e["context"]["node"] != "Y"]
    assert others == []


DEFER_DAG = """\
topic: defer
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, max_attempts: 1}}
nodes:
  - {{id: F, title: fails, file_surface: [f/], discipline: sh, evaluators: [{{name: never, run: "false"}}]}}
  - {{id: G, title: after fails, depends_on: [F], file_surface: [g/], discipline: sh}}
  - {{id: P, title: one, file_surface: [p/], discipline: sh}}
  - {{id: Q, title: two, depends_on: [P], file_surface: [q/], discipline: sh}}
  - {{id: R, title: three, depends_on: [Q], file_surface: [r/], discipline: sh}}
"""
# R, last of the chain that does not need F, returns only once the person was notified of F's seam (the
# run goes on past it); under the layered barrier R never starts before the pause
PLAIN = r"""#!/bin/sh
d=$(echo "$ORCH_NODE" | tr A-Z a-z)
n=0
while [ "$ORCH_NODE" = R ] && ! grep -q "seam realignment F" "NOTIFIED" && [ "$n" -lt 2400 ]; do
  sleep 0.05; n=$((n + 1))
done
mkdir -p "$d" && echo "$ORCH_NODE" > "$d/one.txt"
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_node_waiting_for_realignment_does_not_stop_the_nodes_that_do_not_need_it(tmp_path, orch, schedule):
    notified = tmp_path / "repo" / ".scratch" / "notified"
    repo = campaign_repo(tmp_path, DEFER_DAG.format(schedule=schedule), PLAIN.replace("NOTIFIED", str(notified)))
    (repo / ".ledger" / "config.yaml").write_text(
        f"notify: 'echo \"$ORCH_EVENT $ORCH_SEAM $ORCH_NODE\" >> {notified}'\n")
    result = orch("run", "--jobs", "2", cwd=repo)
    assert result.rc == 75, result.out + result.err
    seams = [e["context"] for e in journal(repo, "defer") if e["kind"] == "seam"]
    assert [(s["seam"], s["node"]) for s in seams] == [("realignment", "F")]  # asked once, about F
    found = statuses(repo, orch, "defer")
    assert found["F"] == "REWORK" and found["G"] == "PENDING"
    if schedule == "eager":  # the person is told at once (R runs meanwhile); the chain runs to its end
        assert (found["P"], found["Q"], found["R"]) == ("ACCEPTED", "ACCEPTED", "ACCEPTED")
        assert "the run goes on with what does not wait for it" in result.out
        went_on = [e["context"] for e in journal(repo, "defer") if e["kind"] == "transition"
                   and e["context"]["from"] == "SEAM"]
        assert [(t["outcome"], t["to"]) for t in went_on] == [("deferred", "CHECKPOINT"), ("paused", "PAUSE")]
    else:  # the barrier: layer 1 (Q) waits for layer 0, where F waits for the person
        assert found["Q"] == "PENDING" and found["R"] == "PENDING"
    assert notified.read_text().splitlines() == ["seam realignment F"]  # once: when it opened, or at the pause
    # skip: F and its dependent G are skipped, and the campaign closes
    assert orch("decide", "realignment", "skip", cwd=repo).rc == 0
    done = orch("resume", "--topic", "defer", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert statuses(repo, orch, "defer") == {"F": "SKIPPED", "G": "SKIPPED", "P": "ACCEPTED", "Q": "ACCEPTED",
                                             "R": "ACCEPTED"}


HALTER = r"""#!/bin/sh
# every node stops for a person on its first attempt and does its work on the next
if [ "$ORCH_ATTEMPT" = 1 ]; then
  printf '{"freeze": "reserved-halt", "reason": "%s needs a person"}' "$ORCH_NODE" > "$ORCH_RETURN"
  exit 0
fi
mkdir -p "$ORCH_NODE" && echo done > "$ORCH_NODE/out.txt"
"""
HALT_DAG = """\
topic: halts
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, max_attempts: 2}}
nodes:
  - {{id: A, title: a, file_surface: [A/], discipline: sh}}
  - {{id: B, title: b, file_surface: [B/], discipline: sh}}
"""


@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_two_reserved_halts_in_one_layer_are_asked_one_after_the_other(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, HALT_DAG.format(schedule=schedule), HALTER)
    assert orch("run", "--jobs", "2", "--no-interactive", cwd=repo).rc == 75
    first = json.loads(orch("status", "--json", cwd=repo).out)["seams"][0]["node"]
    second = "B" if first == "A" else "A"
    assert orch("decide", "reserved-halt", "skip", "--note", "not needed", cwd=repo).rc == 0
    again = orch("resume", "--no-interactive", cwd=repo)  # the second seam is asked, nothing is stuck
    assert again.rc == 75 and "Traceback" not in again.err, again.out + again.err
    assert f"paused at seam reserved-halt for node {second}" in again.out
    assert orch("decide", "reserved-halt", "rework", "--note", "go on", cwd=repo).rc == 0
    done = orch("resume", "--no-interactive", cwd=repo)
    assert done.rc == 75 and "final-acceptance" in done.out, done.out + done.err
    assert statuses(repo, orch, "halts") == {first: "SKIPPED", second: "ACCEPTED"}
