"""Your `merge.directoryRenames = true` does not change what orchestrate's merges do (rv77).

With it, git moved the file C adds in d/ to e/, where B moved d/'s files: a clean merge, so the probe said
clean, and MERGE then refused C as a merge that changes what no judged diff changes ("its history brings in
other commits"), an attempt spent on a misleading reason. Orchestrate's git keeps git's default, a conflict,
found early by the probe and named in C's next brief, as without that setting (tests/test_engine_probes.py).
"""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, journal
from tests.test_engine_probes import DAG, FILES, WORKER, probes_of


def test_a_directory_rename_conflict_is_one_whatever_your_config_says(tmp_path, orch):
    repo = campaign_repo(tmp_path, DAG.format(attempts=2), WORKER, FILES)
    repo.git("config", "merge.directoryRenames", "true")
    result = orch("run", "--no-interactive", cwd=repo)
    assert result.rc == 75, result.out + result.err
    entries = journal(repo, "early")
    assert probes_of(entries) == [("B", True, [], ["A"]), ("C", False, ["e/three.txt"], ["B"])]
    assert not [e for e in entries if e["kind"] == "result" and e["context"].get("aborted")]
    assert "C: conflict found before its turn (e/three.txt with node B); REWORK" in result.out
    tree = repo.git("ls-tree", "-r", "--name-only", "campaign/early").splitlines()
    assert {"a.txt", "e/one.txt", "e/two.txt", "d/three.txt"} <= set(tree)
