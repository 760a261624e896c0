"""Gate plugins in a run: `gates:` instances of a plugin and EXTENDS actions judge the node, their
results are stamped with the plugin's identity (R5), and a named plugin that cannot load stops
`validate` and `run` before anything is written (X2, X6)."""
from __future__ import annotations

import json

from tests.engine_helpers import campaign_repo, journal_text
from tests.plugin_site import gate

SCAN = """def check(self, config, cwd, env):
    import pathlib
    hits = [p.name for p in pathlib.Path(cwd).glob('*.txt') if 'SECRET=' in p.read_text()]
    return (1, hits[0] + ': ' + config['message']) if hits else (0, 'clean')"""
REVIEW = """def check(self, config, cwd, env):
    return 0, 'reviewed as ' + config['persona'] + ' at ' + env['ORCH_HEAD'][:7]"""

DAG = """\
topic: plug
workers: {sh: "./work.sh"}
gates:
  no-secrets: {plugin: secret-scan, message: "a key in the tree"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh, evaluators: [no-secrets]}
edges:
  - {id: e9, from: A, to: "plugin:reviewer", predicate: EXTENDS, actions: [{name: security-review, persona: strict}]}
"""
WORKER = """#!/bin/sh
if [ "$ORCH_ATTEMPT" = 1 ]; then echo SECRET=1 > a.txt; else echo fine > a.txt; fi
"""


def gate_entries(repo) -> list[dict]:
    journal = journal_text(repo, "plug").splitlines()
    return [e for e in map(json.loads, journal) if e["kind"] == "gate" and e["context"]["gate"] in
            ("no-secrets", "security-review")]


def test_plugin_gates_judge_the_node_and_are_stamped_with_the_plugin(tmp_path, site, orch):
    site.add("orchestrate-secrets", "1.0.0", gate("secret-scan", body=SCAN, version="1.0.0"), call=False)
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=REVIEW, version="0.3.0"), call=False)
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("validate", cwd=repo).rc == 0

    result = orch("run", "--quiet", cwd=repo)

    assert result.rc == 75, result.out + result.err
    seen = [(e["context"]["gate"], e["context"]["code"], e["source_entity"]) for e in gate_entries(repo)]
    assert seen == [("no-secrets", 1, "plugin:secret-scan@1.0.0"), ("security-review", 0, "plugin:reviewer@0.3.0"),
                    ("no-secrets", 0, "plugin:secret-scan@1.0.0"), ("security-review", 0, "plugin:reviewer@0.3.0")]
    first = gate_entries(repo)[0]["context"]["summary"]
    assert first == "FAIL (secret-scan): a.txt: a key in the tree"
    assert "reviewed as strict at " in gate_entries(repo)[1]["context"]["summary"]
    status = json.loads(orch("status", "--json", cwd=repo).out)
    assert [(n["id"], n["status"], n["attempt"]) for n in status["nodes"]] == [("A", "ACCEPTED", 2)]


def test_a_named_plugin_that_is_not_installed_stops_validate_and_run(tmp_path, site, orch):
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=REVIEW), call=False)
    repo = campaign_repo(tmp_path, DAG, WORKER)

    checked = orch("validate", cwd=repo)
    ran = orch("run", cwd=repo)

    for r in (checked, ran):
        assert r.rc == 1
        # rv83: at the line naming it, with the fix; it was one line naming neither file nor line
        assert ("dag.yaml:4: gates.no-secrets.plugin: no gate plugin named 'secret-scan' is installed; installed gate "
                "plugins: reviewer; install it, or name one that `orchestrate plugins` lists") in r.out + r.err, r
    assert not (repo / ".ledger" / "state" / "plug").exists()
    listed = json.loads(orch("validate", "--json", cwd=repo).out)  # was {"error": ...}, not the list --help promises
    assert [(p["line"], p["field"], p["code"]) for p in listed] == [(4, "gates.no-secrets.plugin", "plugin")], listed


def test_x6_a_named_plugin_that_fails_to_import_is_an_error_with_its_cause(tmp_path, site, orch):
    site.add("orchestrate-secrets", "1.0.0", gate("secret-scan", body=SCAN, prelude="import detect_secrets"),
             call=False)
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=REVIEW), call=False)
    repo = campaign_repo(tmp_path, DAG, WORKER)
    checked = orch("validate", cwd=repo)
    assert checked.rc == 1
    assert "gate plugin 'secret-scan' (entry point" in checked.out
    assert "failed to import: ModuleNotFoundError: No module named 'detect_secrets'" in checked.out


def test_x2_a_newer_protocol_is_refused_when_named(tmp_path, site, orch):
    site.add("orchestrate-secrets", "1.0.0", gate("secret-scan", body=SCAN, protocol_version=2), call=False)
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=REVIEW), call=False)
    repo = campaign_repo(tmp_path, DAG, WORKER)
    checked = orch("validate", cwd=repo)
    assert checked.rc == 1
    assert "requires protocol version 2, but this orchestrate supports version 1" in checked.out


PERSONA = """def check(self, config, cwd, env):
    return 0, 'reviewed as ' + config['persona']"""
EXTENDS_DAG = """\
topic: plug
workers: {sh: "./work.sh"}
gates:
  unit: {plugin: command, run: "true"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, file_surface: [b.txt], discipline: sh}
  - {id: C, file_surface: [c.txt], discipline: sh, evaluators: [unit]}
  - {id: H, file_surface: [h.txt], discipline: sh}
edges:
  - {id: e1, from: A, to: "plugin:reviewer", predicate: EXTENDS, actions: [{name: review, persona: strict},
                                                                          {name: unit, persona: picky}]}
  - {id: e2, from: B, to: "plugin:reviewer", predicate: EXTENDS, actions: [{name: review, persona: lenient}]}
  - {id: e3, from: H, to: A, predicate: COMPOSES}
"""


def test_an_extends_action_judges_its_own_node_and_its_hubs_with_its_own_config(tmp_path, site, orch):
    site.add("orchestrate-review", "0.3.0", gate("reviewer", body=PERSONA, version="0.3.0"), call=False)
    repo = campaign_repo(tmp_path, EXTENDS_DAG, "#!/bin/sh\necho x > \"$(echo $ORCH_NODE | tr A-Z a-z).txt\"\n")

    assert orch("run", "--quiet", cwd=repo).rc == 75

    journal = [e["context"] for e in map(json.loads, journal_text(repo, "plug").splitlines()) if e["kind"] == "gate"]
    seen = {(g["node"], g["gate"], g["summary"]) for g in journal if g["gate"] in ("review", "unit")}
    assert seen == {("A", "review", "PASS (reviewer): reviewed as strict"), ("A", "unit", "PASS (reviewer): reviewed as picky"),
                    ("H", "review", "PASS (reviewer): reviewed as strict"), ("H", "unit", "PASS (reviewer): reviewed as picky"),
                    ("B", "review", "PASS (reviewer): reviewed as lenient")}  # C's `unit` is its command alone
    evaluated = {g["node"]: g["summary"] for g in journal if g["gate"] == "evaluators"}
    assert evaluated["A"] == evaluated["H"] == "PASS: no evaluators declared"  # A's `unit` is the plugin's alone
    assert evaluated["C"] == "PASS: 1 evaluator(s) passed"
