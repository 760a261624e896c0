"""Checkpoint reading rules (reference/seeds-other.md §3.7) and retention."""
from __future__ import annotations

import json
import time

import pytest

from orchestrate.recorder import checkpoints
from orchestrate.recorder.campaign import Campaign
from orchestrate.recorder.checkpoints import CheckpointRefused


def _write(folder, topic="api", **state):
    c = Campaign(topic=topic, tip=state.get("tip", "a" * 40))
    return checkpoints.write(folder, c, log_seq=state.get("seq", 3), log_entry_id=state.get("entry", f"{topic}:3"),
                             message="test")


def _newest(folder, topic="api", ids=None):
    warnings = []
    ids = ids or {3: f"{topic}:3"}
    found = checkpoints.newest(folder, topic, ids.get, warnings.append)
    return found, warnings


def _rewrite(path, **changes):
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def test_a_valid_checkpoint_is_read(tmp_path):
    _write(tmp_path)
    (campaign, seq), warnings = _newest(tmp_path)
    assert campaign.topic == "api" and seq == 3 and warnings == []


def test_k1_missing_version_reads_as_1_with_a_warning(tmp_path):
    path = _write(tmp_path)
    _rewrite(path, schema_version=...)
    (campaign, _), warnings = _newest(tmp_path)
    assert campaign.topic == "api"
    assert warnings == [f"checkpoint {path.name} has no schema_version; reading it as version 1"]


def test_k2_a_newer_version_is_refused(tmp_path):
    path = _write(tmp_path)
    _rewrite(path, schema_version=2)
    with pytest.raises(CheckpointRefused) as exc:
        _newest(tmp_path)
    assert "schema_version 2, but this orchestrate reads at most 1" in str(exc.value)
    assert "--from-log" in str(exc.value)
    assert exc.value.exit_code == 1


@pytest.mark.parametrize("bad", ["1", True, 0, 1.0, -1, None])
def test_k3_a_version_that_is_not_a_positive_integer_is_invalid(tmp_path, bad):
    path = _write(tmp_path)
    _rewrite(path, schema_version=bad)
    with pytest.raises(CheckpointRefused, match="invalid schema_version"):
        _newest(tmp_path)


def test_k5_broken_json_is_skipped_for_the_next_older(tmp_path):
    older = _write(tmp_path, tip="b" * 40)
    time.sleep(0.001)
    newer = _write(tmp_path)
    newer.write_text(newer.read_text()[:20])
    (campaign, _), warnings = _newest(tmp_path)
    assert campaign.tip == "b" * 40
    assert warnings == [f"checkpoint {newer.name} is not valid JSON; ignoring it"]
    assert older.exists()


def test_a_checkpoint_that_does_not_match_the_journal_is_ignored(tmp_path):
    _write(tmp_path)
    found, warnings = _newest(tmp_path, ids={3: "api:99"})
    assert found is None and "does not match the journal" in warnings[0]


def test_unknown_keys_are_ignored(tmp_path):
    path = _write(tmp_path)
    _rewrite(path, future_field={"x": 1})
    (campaign, _), warnings = _newest(tmp_path)
    assert campaign.topic == "api" and warnings == []


def test_k6_k10_retention_keeps_the_newest_10_with_distinct_names(tmp_path):
    paths = [_write(tmp_path) for _ in range(12)]
    assert len({p.name for p in paths}) == 12  # microseconds and a random suffix: no collision
    kept = checkpoints.listing(tmp_path, "api")
    assert len(kept) == 10 and kept == paths[2:]


def test_k7_k8_pruning_touches_only_this_topics_files(tmp_path):
    other = [_write(tmp_path, topic="api_v2", entry="api_v2:3") for _ in range(3)]
    (tmp_path / "notes.json").write_text("{}")
    for _ in range(12):
        _write(tmp_path)
    assert all(p.exists() for p in other)
    assert (tmp_path / "notes.json").exists()
    assert len(checkpoints.listing(tmp_path, "api")) == 10
    assert len(checkpoints.listing(tmp_path, "api_v2")) == 3
