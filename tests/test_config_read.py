"""orchestrate/config.py parses config.yaml again only when its stat says it changed."""
from __future__ import annotations

from orchestrate import config


def test_a_section_is_read_anew_after_any_write_and_parsed_once_while_the_file_stands(tmp_path, monkeypatch):
    from orchestrate import stamps
    path = tmp_path / "config.yaml"
    path.write_text("sandbox: none\n")
    monkeypatch.setattr(stamps, "FINE", -60.0)  # as if written a minute ago: its stat stands for its content
    parsed = []
    real = config._parsed
    monkeypatch.setattr(config, "_parsed", lambda p: parsed.append(p) or real(p))
    assert config.read(tmp_path, "sandbox").value == "none"
    assert config.read(tmp_path, "sandbox").value == "none" and len(parsed) == 1
    path.write_text("sandbox: bwrap\n")  # another size: parsed again
    assert config.read(tmp_path, "sandbox").value == "bwrap" and len(parsed) == 2
    monkeypatch.setattr(stamps, "FINE", 60.0)  # written within the clock's tick: parsed at every read
    path.write_text("sandbox: auto!\n")
    assert config.read(tmp_path, "sandbox").value == "auto!" and len(parsed) == 3
    assert config.read(tmp_path, "sandbox").value == "auto!" and len(parsed) == 4
    path.unlink()
    assert config.read(tmp_path, "sandbox").value is None


def test_only_the_thread_that_collects_problems_has_refusals_collected(tmp_path):
    """`problems` collects every refusal of config.yaml while it runs (validate lists them all); a run checks a
    person's edit that way mid-run while evaluator threads read their settings, whose refusals must still stop
    them, not be taken for the check's and read as defaults."""
    import threading
    import pytest
    from orchestrate.errors import UsageError
    (tmp_path / "config.yaml").write_text("notify: 5\n")
    raised = []

    def elsewhere():
        try:
            config.notify(tmp_path)
        except UsageError as exc:
            raised.append(str(exc))

    def reader(ledger):
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        return config.notify(ledger)
    found = config.problems(tmp_path, {"notify": reader})
    assert [p.field for p in found] == ["notify"], found
    assert len(raised) == 1 and "notify" in raised[0], raised
    with pytest.raises(UsageError):
        config.notify(tmp_path)
