"""README claims about the recorder:
- Several campaigns: "A recorder commit names its campaign in an `Orchestrate-Topic:` trailer: a move of the
  recorder by another runner of the same campaign, or by hand, is still refused (exit 4)" (and a commit of
  another topic is built on). A worker without the sandbox commits to `.ledger/` while the run waits for it.
- Not yet: "a checkpoint, written every 200 journal entries"."""
from __future__ import annotations

import json

import pytest

from orchestrate.engine.states import TERMINAL
from tests.engine_helpers import campaign_repo, journal
from tests.helpers import RepoDir

TOPIC_DAG = """\
topic: tt
workers: {sh: "./work.sh"}
defaults: {sandbox: none}
nodes:
  - {id: A, depends_on: [], file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [b.txt], discipline: sh}
"""

# A commits to the recorder itself, by hand, with the trailer $TRAILER names (none when empty): once the runner
# has committed its dispatch and waits for A (so no commit of the runner's races with this one), a commit of
# the recorder's tree as it is, on its branch.
TOPIC_WORKER = """#!/bin/sh
set -eu
echo "$ORCH_NODE" > "$(echo "$ORCH_NODE" | tr AB ab).txt"
[ "$ORCH_NODE" = A ] || exit 0
n=0
until [ "$(git -C "$LEDGER" log -1 --format=%s)" = "tt: DISPATCH dispatched -> AWAIT (A)" ] || [ "$n" -ge 600 ]; do
  sleep 0.1; n=$((n + 1))
done
head=$(git -C "$LEDGER" rev-parse HEAD)
made=$(git -C "$LEDGER" commit-tree -p "$head" -m "made by hand" ${TRAILER:+-m "Orchestrate-Topic: $TRAILER"} \
       "$head^{tree}")
git -C "$LEDGER" update-ref HEAD "$made" "$head"
"""


def _trailers(ledger: RepoDir, rev_range: str) -> list[tuple[str, str]]:
    out = ledger.git("log", "--format=%s%x09%(trailers:key=Orchestrate-Topic,valueonly,separator=%x2C)%x00",
                     rev_range)
    return [tuple(rec.strip("\n").split("\t")) for rec in out.split("\0") if rec.strip()]


@pytest.mark.parametrize("trailer, rc", [("", 4), ("tt", 4), ("other", 75)],
                         ids=["by-hand", "same-topic", "other-topic"])
def test_a_recorder_commit_is_built_on_only_when_its_trailer_names_another_topic(tmp_path, orch, monkeypatch,
                                                                               trailer, rc):
    repo = campaign_repo(tmp_path, TOPIC_DAG, TOPIC_WORKER)
    ledger = RepoDir(repo / ".ledger")
    monkeypatch.setenv("LEDGER", str(ledger))
    monkeypatch.setenv("TRAILER", trailer)
    before = ledger.head()
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == rc, done.out + done.err
    hand = ledger.git("log", "--format=%H", "--grep=^made by hand$")
    assert hand
    if rc == 4:
        assert "the recorder branch moved under this runner" in done.err and "made by hand" in done.err
        assert ledger.head() == hand  # nothing of this runner's was committed on top of the move
        assert repo.git("ls-tree", "--name-only", "campaign/tt").split() == ["README.md", "work.sh"]  # it stopped
        return
    assert "final-acceptance" in done.out
    ledger.git("merge-base", "--is-ancestor", hand, "HEAD")  # built on (fails the test otherwise)
    # every commit the campaign made names it; the one by hand is the other topic's
    commits = _trailers(ledger, f"{before}..HEAD")
    assert len(commits) > 10
    assert [c for c in commits if c[1] != "tt"] == [("made by hand", "other")]


CHECKPOINT_NODES = 20  # each node brings about 24 journal entries: two checkpoints before the campaign rests
CHECKPOINT_DAG = "topic: cp\nworkers: {sh: ./work.sh}\ndefaults: {sandbox: none}\nnodes:\n" + "".join(
    f"  - {{id: N{i}, depends_on: [], file_surface: [f{i}.txt], discipline: sh}}\n" for i in range(CHECKPOINT_NODES))


def test_a_checkpoint_is_written_every_200_journal_entries(tmp_path, orch):
    repo = campaign_repo(tmp_path, CHECKPOINT_DAG, '#!/bin/sh\necho x > "f${ORCH_NODE#N}.txt"\n')
    done = orch("run", "--no-interactive", cwd=repo)
    assert done.rc == 75, done.out + done.err
    entries = journal(repo, "cp")
    assert len(entries) > 400
    # every checkpoint the recorder ever committed (only the newest 10 are kept on disk), in order
    ledger = RepoDir(repo / ".ledger")
    written = []
    for record in reversed(ledger.git("log", "--format=%x00%H", "--diff-filter=A", "--name-only",
                                      "--", "state/cp/checkpoints").split("\0")[1:]):
        sha, *names = record.split()
        written += sorted(json.loads(ledger.git("show", f"{sha}:{name}"))["log_seq"] for name in names)
    # the rule: at the first CHECKPOINT state at least 200 entries after the last checkpoint, and when the run rests
    expected, last = [], 0
    for e in entries:
        ctx = e["context"]
        if e["kind"] == "transition" and (ctx["to"] in {s.value for s in TERMINAL}
                                          or (ctx["from"] == "CHECKPOINT" and e["seq"] - last >= 200)):
            expected.append(e["seq"])
            last = e["seq"]
    assert written == expected
    midway = written[:-1]
    assert len(midway) >= 2 and midway[0] >= 200
    assert all(b - a >= 200 for a, b in zip(midway, midway[1:]))
