"""coherence: surviving references to removed paths, broken links, the DAG, project gates (§3.2, §8.3, §8.6)."""
from __future__ import annotations

from gates import coherence


def judge(repo, base, **kw):
    return coherence.check(repo, base, "HEAD", ledger=kw.pop("ledger", repo / "no-ledger"), **kw)


def test_a_deleted_file_still_referenced_is_an_orphan(repo):
    repo.commit("seed", {"docs/old.md": "# Old\n", "docs/guide.md": "Read docs/old.md first.\n"})
    base = repo.head()
    repo.git("rm", "-q", "docs/old.md")
    repo.commit("drop old")
    v = judge(repo, base)
    assert v.code == 1 and "ORPHAN" in v.items[0].status
    assert v.items[0].subject == "docs/guide.md:1: Read docs/old.md first."


def test_clean_prose_is_coherent(repo):
    repo.commit("seed", {"docs/old.md": "# Old\n", "docs/guide.md": "Formerly there were old notes.\n"})
    base = repo.head()
    repo.git("rm", "-q", "docs/old.md")
    repo.commit("drop old")
    assert judge(repo, base).code == 0


def test_boundaries_keep_longer_names_apart(repo):
    repo.commit("seed", {"docs/old.md": "x\n", "a.md": "see docs/old.md.bak and mydocs/old.md\n"})
    base = repo.head()
    repo.git("rm", "-q", "docs/old.md")
    repo.commit("drop")
    assert judge(repo, base).code == 0


def test_a_rename_counts_as_removal(repo):
    repo.commit("seed", {"src/tool.py": "x\n", "README.md": "Run src/tool.py.\n"})
    base = repo.head()
    repo.git("mv", "src/tool.py", "src/cli.py")
    repo.commit("rename")
    v = judge(repo, base)
    assert v.code == 1 and "refers to removed src/tool.py" in v.items[0].detail


def test_a_url_hides_only_its_own_mention(repo):
    repo.commit("seed", {"ghost.md": "x\n", "a.md": "https://example.com/ghost.md only\n",
                         "b.md": "https://example.com/ghost.md and ghost.md itself\n"})
    base = repo.head()
    repo.git("rm", "-q", "ghost.md")
    repo.commit("drop")
    v = judge(repo, base)
    orphans = [i.subject for i in v.items if i.status == "ORPHAN"]
    assert v.code == 1 and orphans == ["b.md:1: https://example.com/ghost.md and ghost.md itself"]


def test_configured_names_are_part_of_the_cut_set(repo, tmp_path):
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (ledger / "config.yaml").write_text("coherence:\n  names: [ghost]\n")
    repo.commit("seed", {"skills/survivor.md": "run the /ghost workflow\n"})
    base = repo.head()
    repo.commit("nothing removed", {"other.txt": "x\n"})
    assert judge(repo, base, ledger=ledger).code == 1
    (ledger / "config.yaml").write_text("coherence: [not, a, mapping]\n")
    assert judge(repo, base, ledger=ledger).code == 2


def test_links_and_anchors_in_changed_markdown(repo):
    repo.commit("seed", {"docs/target.md": "# Target\n\n## Install steps\n"})
    base = repo.head()
    repo.commit("links", {"docs/index.md": "[ok](target.md) [anchor](target.md#install-steps) "
                                           "[gone](missing.md) [bad](target.md#nope) [web](https://x.org/a.md)\n"
                                           "```\n[in code](nowhere.md)\n```\n"})
    v = judge(repo, base)
    broken = [i for i in v.items if i.status == "BROKEN"]
    assert v.code == 1 and len(broken) == 2
    assert "no such file" in broken[0].detail and "no heading #nope" in broken[1].detail


def test_project_gates_run_in_order_and_must_be_executable(repo, tmp_path):
    ledger = tmp_path / "ledger"
    (ledger / "gates").mkdir(parents=True)
    (ledger / "gates" / "README.md").write_text("docs\n")
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    gate = ledger / "gates" / "10-check"
    gate.write_text("#!/bin/sh\ntest \"$ORCH_BASE\" != \"\" && exit 0\nexit 1\n")
    gate.chmod(0o755)
    assert judge(repo, base, ledger=ledger).code == 0
    gate.write_text("#!/bin/sh\nexit 3\n")
    v = judge(repo, base, ledger=ledger)
    assert v.code == 1 and any(i.subject == "gate 10-check" and i.status == "FAIL" for i in v.items)
    gate.chmod(0o644)
    assert judge(repo, base, ledger=ledger).code == 2


def test_a_missing_evaluator_is_2_not_a_silent_pass(repo, tmp_path):
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (ledger / "config.yaml").write_text("coherence:\n  evaluators: [{name: links, run: no-such-link-checker .}]\n")
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    v = judge(repo, base, ledger=ledger)
    assert v.code == 2 and "could not run" in v.summary


def test_an_invalid_dag_is_incoherent(repo, tmp_path):
    dag = tmp_path / "dag.yaml"
    dag.write_text("nodes: [{id: A}]\n")
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    assert judge(repo, base, dag_path=dag).code == 1


def test_cli_exit_codes(repo, orch):
    base = repo.head()
    repo.commit("x", {"x.txt": "x\n"})
    assert orch("gate", "coherence", "--base", base, "--repo", repo).rc == 0
    assert orch("gate", "coherence", "--base", "no-such-ref", "--repo", repo).rc == 2
    assert orch("gate", "coherence").rc == 2
