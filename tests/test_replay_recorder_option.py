"""`replay --campaign T --recorder DIR` with a DIR that is no recorder names DIR as typed (rv59): it named
the folder above it, which git had been asked about, and which the person never gave."""
from __future__ import annotations


def test_a_recorder_that_does_not_exist_is_named_as_given(repo, tmp_path, orch):
    missing = tmp_path / "x" / "nope"
    done = orch("replay", "--campaign", "t", "--recorder", missing, cwd=repo)
    assert done.rc == 2
    assert f"--recorder {missing}: no such folder" in done.err
    assert f"{missing.parent} is not" not in done.err


def test_a_recorder_outside_any_repository_is_named_as_given(repo, tmp_path, orch):
    outside = tmp_path / "loose" / "ledger"
    outside.mkdir(parents=True)
    done = orch("replay", "--campaign", "t", "--recorder", outside, cwd=repo)
    assert done.rc == 2
    assert f"--recorder {outside}: not in a git repository's checkout" in done.err
