"""What `status` says: layers counted from 0 throughout, each seam named with its node and its whole
reason, every campaign listed newest first, and whether the runner holding the campaign is alive."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.report.status import render
from tests.engine_helpers import campaign_repo

TWO_LAYERS = """\
topic: {topic}
workers: {{sh: "./work.sh"}}
nodes:
  - {{id: A, file_surface: [a.txt], discipline: sh}}
  - {{id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}}
"""
# A writes outside its surface: the run pauses at a surface-exceed seam on A while B waits in layer 1.
STRAY = "#!/bin/sh\necho x > a.txt\n[ \"$ORCH_NODE\" = A ] && echo y > stray.txt\nexit 0\n"
HONEST = "#!/bin/sh\necho \"$ORCH_NODE\" > \"$(echo $ORCH_NODE | tr AB ab).txt\"\n"


def status(orch, repo: Path, *args: str) -> tuple[str, dict]:
    text = orch("status", *args, cwd=repo)
    assert text.rc == 0, text.err
    return text.out, json.loads(orch("status", "--json", *args, cwd=repo).out)


@pytest.mark.parametrize("schedule", ["layered", "eager"])
def test_layers_are_counted_from_0_in_the_header_rows_reasons_and_json(tmp_path, orch, schedule):
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="count"), STRAY)
    assert orch("run", "--quiet", "--no-interactive", "--schedule", schedule, cwd=repo).rc == 75
    text, data = status(orch, repo)
    assert data["layer"] == 0 and data["layer_count"] == 2
    header = text.splitlines()[0]
    assert ", layer 0 (layers 0-1), " in header
    rows = {n["id"]: n["layer"] for n in data["nodes"]}
    assert rows == {"A": 0, "B": 1}
    why = "layer 1 starts after layer 0 is merged" if schedule == "layered" else "starts once A has merged"
    assert re.search(r"^  L0 A ", text, re.M) and re.search(rf"^  L1 B .*{why}$", text, re.M)
    assert not re.search(r"layer 2\b", text)  # nothing counts from 1


def test_the_open_seam_line_names_its_node_and_the_whole_reason(tmp_path, orch):
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="seamy"), STRAY)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    text, data = status(orch, repo)
    [seam] = data["seams"]
    assert seam["node"] == "A"
    line = next(ln for ln in text.splitlines() if ln.startswith("open seam "))
    choices = ", ".join(seam["choices"])
    assert line.startswith(f"open seam {seam['seam']}: ") and line.endswith(f" (node A; choices: {choices})")
    # a reason of several lines is printed whole, under the seam's line; the node's row keeps one line
    data["seams"] = [{**seam, "reason": "first line\nsecond line\nthird line"}]
    shown = render(data)
    at = next(i for i, ln in enumerate(shown) if ln.startswith("open seam "))
    assert shown[at:at + 3] == [f"open seam {seam['seam']}: first line (node A; choices: {choices})",
                                "    second line", "    third line"]


def test_several_campaigns_are_listed_newest_first_to_choose_from(tmp_path, orch):
    dags = {f"{t}.yaml": TWO_LAYERS.format(topic=t) for t in ("zeta", "alpha", "mid")}
    repo = campaign_repo(tmp_path, "nodes: []\n", HONEST, dags)
    for topic in ("zeta", "alpha", "mid"):  # opened in this order: mid is the newest, zeta the oldest
        assert orch("run", "--quiet", "--no-interactive", "--dag", repo / f"{topic}.yaml", cwd=repo).rc == 75
    for command in (("status",), ("status", "--json"), ("resume",), ("decide", "final-acceptance", "accept")):
        refused = orch(*command, cwd=repo)  # one rule for all three: several -> a list, exit 2, nothing done
        assert refused.rc == 2 and (refused.out == "" or "--json" in command), (command, refused.err)
        listed = [ln.strip() for ln in refused.err.splitlines() if ln.startswith("  ")]
        assert [ln.split(":")[0] for ln in listed] == ["mid", "alpha", "zeta"]
        assert all("PAUSE at seam final-acceptance, opened 20" in ln for ln in listed)
    text, data = status(orch, repo, "--topic", "zeta")
    assert text.startswith("campaign zeta: ") and [o["topic"] for o in data["others"]] == ["mid", "alpha"]
    others = [ln for ln in text.splitlines() if ln.startswith("other campaign ")]
    assert [ln.split()[2].rstrip(":") for ln in others] == ["mid", "alpha"]
    assert all("`orchestrate status --topic " in ln for ln in others)
    assert all(": closed, not accepted (final acceptance open or refused), opened 20" in ln for ln in others)
    assert orch("decide", "--topic", "mid", "final-acceptance", "accept", cwd=repo).rc == 0
    text, data = status(orch, repo, "--topic", "zeta")
    assert [(o["topic"], o["ended"]) for o in data["others"]] == [("mid", True), ("alpha", False)]
    assert [ln.split(",")[0] for ln in text.splitlines() if ln.startswith("other campaign ")] == [
        "other campaign mid: ended", "other campaign alpha: closed"]


BLOCKING = """\
#!/bin/sh
touch {marks}/started
while [ ! -f {marks}/release ]; do sleep 0.05; done
echo done > a.txt
"""


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    """Until the worker has started; the runner exiting first is a failure, not a wait."""
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the runner exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            proc.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass


def test_a_runner_killed_with_sigkill_is_reported_as_gone(tmp_path, orch):
    marks = tmp_path / "marks"
    marks.mkdir()
    # no sandbox: the worker must see the marks folder outside its working copy
    repo = campaign_repo(tmp_path, "topic: held\nworkers: {sh: ./work.sh}\nnodes:\n"
                         "  - {id: A, file_surface: [a.txt], discipline: sh, sandbox: none}\n",
                         BLOCKING.format(marks=marks))
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate", "run", "--quiet", "--no-interactive"], cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(marks / "started", proc)
        live, data = status(orch, repo)
        assert data["runner"]["alive"] is True and data["runner"]["pid"] == proc.pid
        assert f"runner: pid {proc.pid} on " in live and "no runner is alive" not in live
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        (marks / "release").touch()  # the orphaned worker ends
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    dead, data = status(orch, repo)
    assert data["runner"]["alive"] is False and data["runner"]["resume"] is True
    assert f"no runner is alive (pid {proc.pid} on " in dead
    assert "`orchestrate resume` continues" in dead
    assert data["last_entry"] and data["last_entry"] in dead


def test_a_paused_campaign_needs_no_runner(tmp_path, orch):
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="rest"), HONEST)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    text, data = status(orch, repo)
    assert data["state"] == "PAUSE" and data["runner"]["alive"] is False and data["runner"]["resume"] is False
    assert "runner" not in text and "no runner is alive" not in text


USING = """#!/bin/sh
echo "$ORCH_NODE" > "$(echo $ORCH_NODE | tr AB ab).txt"
[ "$ORCH_NODE" = A ] && printf '{"usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.042}}' > "$ORCH_USAGE"
[ "$ORCH_NODE" = B ] && printf '{"usage": {"input_tokens": 800, "output_tokens": 100, "cost_usd": 0.008}}' > "$ORCH_USAGE"
exit 0
"""


def test_the_seam_shows_its_show_lines_and_usage_is_totalled_per_node_and_campaign(tmp_path, orch):
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="used"), USING)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    text, data = status(orch, repo)
    [seam] = data["seams"]
    assert seam["seam"] == "final-acceptance" and seam["show"]
    at = text.splitlines().index(next(ln for ln in text.splitlines() if ln.startswith("open seam ")))
    assert text.splitlines()[at + 1:at + 1 + len(seam["show"])] == [f"    {s}" for s in seam["show"]]
    assert any(ln.startswith("    review: git log --first-parent ") for ln in text.splitlines())
    assert data["usage"]["nodes"]["A"] == {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.042}
    assert data["usage"]["total"] == {"input_tokens": 2000, "output_tokens": 400, "cost_usd": 0.05}
    assert "usage reported by workers: 2000 in / 400 out tokens, $0.0500 in all" in text
    assert re.search(r"^  A  1200 in / 300 out tokens, \$0\.0420$", text, re.M)
    assert re.search(r"^  B  800 in / 100 out tokens, \$0\.0080$", text, re.M)


def test_no_usage_reported_means_no_usage_line(tmp_path, orch):
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="quiet"), HONEST)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    text, data = status(orch, repo)
    assert data["usage"] is None and "usage reported" not in text


def test_a_rows_reason_under_eager_says_what_the_node_is_doing_not_its_layer():
    """Under eager a node of a later layer runs while an earlier layer is still open: its own state is the
    reason (the layer is not), and an accepted node waiting for its merge is not 'waiting to be judged'."""
    from orchestrate.recorder.campaign import Campaign, NodeState
    from orchestrate.report.status import waiting_reason
    nodes = {"A": NodeState("A", status="DISPATCHED", attempt=1, spawned=1),
             "B": NodeState("B", status="DISPATCHED", attempt=1, spawned=1),
             "C": NodeState("C", status="LANDED", attempt=1, head="h1", accepted_at="h1"),
             "D": NodeState("D", status="LANDED", attempt=1, head="h2"), "E": NodeState("E")}
    c = Campaign(topic="t", layers=[["A"], ["B", "C", "D", "E"]], k=0, schedule="eager", nodes=nodes)
    assert [waiting_reason(c, n, 0 if n == "A" else 1) for n in "ABCDE"] == [
        "worker running", "worker running", "accepted, waiting to be merged", "waiting to be judged",
        "starts once what it depends on has merged"]


def test_status_json_has_the_same_keys_whether_a_runner_holds_the_campaign_or_not(tmp_path, orch):
    """rv84: a script reading `status --json` found `runner.command` and `runner.origin` only while a lock
    holder was there, and `left_answer` only while an answer waited: a key it read could vanish."""
    from orchestrate.recorder.lock import CampaignLock
    repo = campaign_repo(tmp_path, TWO_LAYERS.format(topic="keys"), HONEST)
    assert orch("run", "--quiet", "--no-interactive", cwd=repo).rc == 75
    _, resting = status(orch, repo)
    with CampaignLock(repo / ".scratch" / "locks", "keys", "resume"):  # as a running runner holds it
        _, held = status(orch, repo)
    assert held["runner"]["alive"] is True and resting["runner"]["alive"] is False
    assert set(held) == set(resting) and set(held["runner"]) == set(resting["runner"]), (held, resting)
    assert resting["left_answer"] is None and resting["runner"]["command"] is None
