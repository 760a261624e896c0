"""`validate` lists every problem in one pass and none that is false; an empty DAG is one clear problem."""
from __future__ import annotations

import json
import os
import threading

import pytest

from orchestrate.dag.load import check_dag
from tests.engine_helpers import campaign_repo, cli

# A valid DAG: A fans out to B and C, D joins them and composes E (E before D; D is judged by E's gate too).
VALID = """\
workers: {sh: "true"}
nodes:
  - {id: A, file_surface: [a.txt], discipline: sh}
  - {id: B, depends_on: [A], file_surface: [src/b/], discipline: sh}
  - {id: C, depends_on: [A], file_surface: ["docs/*.md"], discipline: sh}
  - {id: D, depends_on: [B, C], file_surface: [a.txt], discipline: sh}
  - {id: E, file_surface: [e.txt], discipline: sh, evaluators: [{name: unit, run: "true"}]}
edges:
  - {id: e1, from: D, to: E, predicate: COMPOSES}
"""
FAULTS = {  # a wrong field, and the code validation must give it
    "token": (", file_surface: [\"/abs\"]", "surface-token"),
    "timeout": (", timeout: 0", "type"),
    "title": (", title: [x]", "type"),
    "unknown-key": (", colour: red", "unknown-key"),
    "activation": (", activation: sometimes", "enum"),
    "class": (", file_surface: [\"[[:word:]]\"]", "surface-token"),
}


def _with_fault(node: str, fault: str) -> tuple[str, int]:
    text, _ = FAULTS[fault]
    lines = VALID.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(f"  - {{id: {node},"))
    line = lines[at]
    if "file_surface" in text:  # replace the node's surface rather than giving the key twice
        start = line.index(", file_surface: ")
        end = line.index("]", start) + 1
        line = line[:start] + line[end:]
    lines[at] = line[:line.rindex("}")] + text + line[line.rindex("}"):]
    return "\n".join(lines) + "\n", at + 1


def test_the_valid_base_is_valid(tmp_path):
    path = tmp_path / "dag.yaml"
    path.write_text(VALID)
    dag, problems = check_dag(path)
    assert problems == [] and dag is not None


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("node", ["A", "B", "C", "D", "E"])
def test_one_wrong_field_gives_one_problem_and_no_false_one(tmp_path, node, fault):
    """Whichever node has the fault, the graph checks still see that node: nothing else is reported."""
    text, line = _with_fault(node, fault)
    path = tmp_path / "dag.yaml"
    path.write_text(text)
    dag, problems = check_dag(path)
    assert dag is None
    assert [(p.line, p.code) for p in problems] == [(line, FAULTS[fault][1])], problems


DAG_WITH_EVERYTHING = """\
workers: {sh: "true"}
nodes:
  - {id: N1, file_surface: [a.txt], discipline: sh}
  - {id: N2, depends_on: [N1], file_surface: ["src\\\\win.py"], discipline: sh}
  - {id: N3, depends_on: [N2, N9], file_surface: [c.txt], discipline: sh}
  - {id: N4, depends_on: [N5], file_surface: [d.txt], discipline: sh, max_attempts: lots}
  - {id: N5, depends_on: [N4], file_surface: [e.txt], discipline: sh}
edges:
  - {id: t1, from: N2, to: N6, predicate: TRIGGERS}
"""


def test_validate_lists_node_graph_and_edge_problems_in_one_run(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_text(DAG_WITH_EVERYTHING)
    plain = orch("validate", "--dag", path)
    assert plain.rc == 1
    out = plain.out
    assert f"{path}:4: nodes.N2.file_surface: `src\\win.py` contains a backslash" in out
    assert f"{path}:5: nodes.N3.depends_on: `N9` is not a node of this DAG" in out
    assert "`N2` is not a node" not in out  # N2 has a wrong field, but it is a node
    assert "dependency cycle N4 -> N5 -> N4" in out
    assert f"{path}:6: nodes.N4.max_attempts:" in out
    assert "N6" in out and "N2` is not" not in out  # the edge's unknown end is named, its known end is not
    listed = json.loads(orch("validate", "--dag", path, "--json").out)
    assert {p["code"] for p in listed} >= {"surface-token", "dangling", "cycle", "type"}
    assert len(listed) == len(plain.out.splitlines())


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing here yet\n", "---\n# only a comment\n"])
def test_an_empty_or_comment_only_dag_is_one_clear_problem(tmp_path, orch, text):
    path = tmp_path / "dag.yaml"
    path.write_text(text)
    plain = orch("validate", "--dag", path)
    assert plain.rc == 1
    assert plain.out.startswith(f"{path}:1: the DAG has no nodes:")
    assert "invalid: 1 problem(s)" in plain.err
    as_json = orch("validate", "--dag", path, "--json")
    assert as_json.rc == 1
    [problem] = json.loads(as_json.out)
    assert (problem["line"], problem["code"], problem["file"]) == (1, "empty", str(path))
    assert problem["message"].startswith("the DAG has no nodes")


def test_run_on_an_empty_dag_says_why(tmp_path, orch):
    repo = campaign_repo(tmp_path, "# to be written\n", "#!/bin/sh\n")
    before = repo.git("for-each-ref")
    result = orch("run", "--quiet", cwd=repo)
    assert result.rc == 1
    said = result.out + result.err
    assert "dag.yaml:1: the DAG has no nodes" in said
    assert "is invalid; nothing was written" in said
    assert repo.git("for-each-ref") == before


def test_a_base_that_names_no_commit_is_a_problem_at_its_line_for_validate_and_run(tmp_path):
    repo = campaign_repo(tmp_path, "topic: based\nbase: nonexistentref\n" + VALID, "#!/bin/sh\n")
    dag = repo / ".ledger" / "state" / "dag.yaml"
    said = (f"{dag}:2: base: `nonexistentref` does not name a commit in {repo}; name a branch, tag or commit "
            "there (`git log` lists them)")
    checked = cli(repo, "validate")
    assert checked.returncode == 1 and checked.stdout.splitlines() == [said], checked.stdout + checked.stderr
    as_json = json.loads(cli(repo, "validate", "--json").stdout)
    assert [(p["line"], p["field"], p["code"]) for p in as_json] == [(2, "base", "unknown-base")]
    before = repo.git("for-each-ref")
    ran = cli(repo, "run", "--no-interactive")
    assert ran.returncode == 2 and f"orchestrate: error: {said}" in ran.stderr, ran.stderr
    assert repo.git("for-each-ref") == before
    # outside the repository only the contract is checked: the ref may name a commit where the plan runs
    assert cli(tmp_path, "validate", "--dag", str(dag)).returncode == 0


def test_validate_notes_a_token_another_glob_dialect_would_read_otherwise(tmp_path, orch):
    dag = tmp_path / "d.yaml"
    dag.write_text('workers: {sh: "true"}\nnodes:\n'
                   '  - {id: A, file_surface: ["docs/[^a]*.md", "src/a**"], discipline: sh}\n'
                   '  - {id: B, file_surface: [plain.txt, "lib/**/x.py"], discipline: sh}\n')
    r = orch("validate", "--dag", dag, cwd=tmp_path)
    assert r.rc == 0, r.out + r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note: ")]
    assert notes == [
        f"note: {dag}:3: nodes.A.file_surface: `docs/[^a]*.md` is read as git reads it: `[^...]` negates, "
        "as `[!...]` does (Python's fnmatch would match a `^` there)",
        f"note: {dag}:3: nodes.A.file_surface: `src/a**` is read as git reads it: a `**` that is not a whole "
        "path segment stays inside one segment, except at the very end"]
    quiet = orch("validate", "--dag", dag, "--json", cwd=tmp_path)
    assert quiet.rc == 0 and json.loads(quiet.out) == [] and "note:" not in quiet.err


def test_a_note_names_the_line_of_a_token_written_quoted_and_escaped(tmp_path):
    dag = tmp_path / "d.yaml"  # the token read is `q/a\*`; the text holds `"q/a\\*"`, which does not contain it
    dag.write_text('workers: {sh: "true"}\nnodes:\n  - id: A\n    discipline: sh\n    file_surface:\n'
                   '      - plain.txt\n      - "q/a\\\\*"\n')
    r = cli(tmp_path, "validate", "--dag", str(dag))
    assert r.returncode == 0, r.stdout + r.stderr
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("note: ")] == [
        f"note: {dag}:7: nodes.A.file_surface: `q/a\\*` is read as git reads it: a backslash makes the next glob "
        "character literal (it is no path separator)"]


def test_validate_notes_braces_which_git_reads_literally(tmp_path, orch):
    dag = tmp_path / "d.yaml"
    dag.write_text('workers: {sh: "true"}\nnodes:\n'
                   '  - {id: A, file_surface: ["src/*.{c,h}", "{a,b}.txt", "x{1}.txt", "v{1..3}/"], discipline: sh}\n')
    r = orch("validate", "--dag", dag, cwd=tmp_path)
    assert r.rc == 0, r.out + r.err
    braces = "braces are literal (a shell would expand `{a,b}` or `{1..3}` into several names: list each as a token)"
    assert [ln for ln in r.err.splitlines() if ln.startswith("note: ")] == [
        f"note: {dag}:3: nodes.A.file_surface: `src/*.{{c,h}}` is read as git reads it: {braces}",
        f"note: {dag}:3: nodes.A.file_surface: `{{a,b}}.txt` is read as git reads it: {braces}",
        f"note: {dag}:3: nodes.A.file_surface: `v{{1..3}}/` is read as git reads it: {braces}"]


def test_two_campaign_checks_may_not_share_a_name(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_text('topic: t\nworkers: {w: x}\nchecks:\n  - {name: unit, run: "true"}\n  - {name: lint, run: "true"}\n'
                    '  - {name: unit, run: "false"}\nnodes:\n  - {id: A, title: a, file_surface: [a], discipline: w}\n')
    r = orch("validate", "--dag", path)
    assert r.rc == 1 and r.out.splitlines() == [
        f"{path}:6: checks[2].name: `unit` is the name of checks[0] too; names must be unique"]


@pytest.mark.parametrize("value, said", [(".inf", "the number inf"), ("1.5", "the number 1.5")])
def test_a_fraction_where_a_whole_number_is_wanted_is_named(tmp_path, orch, value, said):
    path = tmp_path / "dag.yaml"
    path.write_text(f"topic: t\nworkers: {{w: x}}\nnodes:\n  - {{id: A, title: a, file_surface: [a], discipline: w, "
                    f"timeout: {value}}}\n")
    r = orch("validate", "--dag", path)
    assert r.rc == 1 and f"nodes.A.timeout: expected a whole number, got {said}" in r.out, r.out


def test_a_json_dag_with_problems_names_each_problems_line(tmp_path, orch):
    path = tmp_path / "plan.json"
    path.write_text('{\n  "topic": "j",\n  "workers": {"w": "x"},\n  "nodes": [\n'
                    '    {"id": "A", "title": "a", "file_surface": ["a"], "discipline": "w"},\n'
                    '    {"id": "B", "titel": "b", "file_surface": ["b"], "discipline": "w", "depends_on": ["Z"]}\n'
                    '  ]\n}\n')
    r = orch("validate", "--dag", path)
    assert r.rc == 1
    lines = r.out.splitlines()
    assert any(ln.startswith(f"{path}:6: nodes.B.titel: unknown key") for ln in lines), r.out
    assert any(ln.startswith(f"{path}:6: nodes.B.depends_on:") and "`Z`" in ln for ln in lines), r.out


def test_an_entry_of_file_surface_that_is_not_text_is_one_problem(tmp_path, orch):
    path = tmp_path / "dag.yaml"
    path.write_text("topic: t\nworkers: {w: x}\nnodes:\n  - {id: A, title: a, file_surface: [{x: 1}, a], discipline: w}\n")
    r = orch("validate", "--dag", path)
    assert r.rc == 1 and r.out.splitlines() == [
        f"{path}:4: nodes.A.file_surface: every entry must be text; `{{'x': 1}}` is a mapping"]


@pytest.mark.parametrize("text, line, said", [
    ("topic: x\nnodes:\n\t- id: A\n", 3, "replace the tabs on this line"),
    ('topic: x\nnodes:\n  - id: A\n    file_surface: ["a]\n    title: t\n', 4, "a quote opened there is never closed"),
    ("topic: x\nnodes: [a, b\n", 2, "close the `[` list with `]`"),
    ("topic: a: b\n", 1, "a value holding `: ` must be quoted"),
    ('topic: x\nnodes:\n  - id: A\n    title: "say "hi""\n', 4, "a quote inside a quoted value ends it"),
    ("topic: x\nnodes:\n  - id: A\n    title: @home\t# note\n", 4, "`@`, a backquote or `%` must be quoted"),
    ("topic: x\n\tnodes: []\n", 2, "replace the tabs on this line"),
    ("topic: x\nx: " + "[" * 400 + "a" + "]" * 400 + "\nnodes: []\n", 0, "nested hundreds of levels deep"),
])
def test_a_yaml_syntax_error_names_a_line_of_the_file_and_what_to_change(tmp_path, text, line, said):
    """rv45: the parser's words alone named no fix, and a quote left open pointed past the file's last line."""
    path = tmp_path / "dag.yaml"
    path.write_text(text)
    problems = check_dag(path)[1]
    assert [(p.line, p.code) for p in problems] == [(line, "yaml")] and said in problems[0].message, problems


def test_aliases_that_stand_for_a_thousand_million_values_are_refused_before_they_are_built(tmp_path):
    """rv45: ten lines of aliases of aliases made validation walk 10**9 values (55 s for 1 KB)."""
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "dag.yaml"
    path.write_text("\n".join(rows + ["topic: x", "nodes: []"]) + "\n")
    problems = check_dag(path)[1]
    assert len(problems) == 1 and "aliases stand for more than 5,000,000 values" in problems[0].message, problems
    # rv46: flow style, an alias right after a quoted key's colon, a list of text that holds the expansion
    rows = ['"a0": &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    rows += [f'"a{i}": &a{i} [{", ".join([f"{{{chr(34)}k{chr(34)}:*a{i - 1}}}"] * 10)}]' for i in range(1, 9)]
    path.write_text("{" + ", ".join(rows) + ', "topic": "x", "nodes": [{"id": "A", "file_surface": [{"k":*a8}]}]}\n')
    problems = check_dag(path)[1]
    assert len(problems) == 1 and "aliases stand for more than 5,000,000 values" in problems[0].message, problems
    path.write_text("defaults: &d {timeout: 60}\ntopic: x\nworkers: {sh: 'true'}\nnodes:\n"
                    "  - {id: A, file_surface: [a.txt], discipline: sh, <<: *d}\n")
    assert check_dag(path)[1] == []  # an alias or two, as DAGs use them, is fine


def test_an_edge_with_one_problem_still_has_its_id_and_its_ends_checked(tmp_path):
    """rv45: a duplicate id was reported only once the edge had no other problem, and an edge whose predicate
    was misspelt had its ends unchecked: each fix showed the next problem."""
    path = tmp_path / "dag.yaml"
    path.write_text('topic: e\nworkers: {c: "true"}\nnodes:\n  - {id: A, file_surface: [a], discipline: c}\n'
                    '  - {id: B, file_surface: [b], discipline: c}\nedges:\n'
                    '  - {id: e3, from: A, to: B, predicate: TRIGGERS}\n'
                    '  - {id: e3, from: A, to: B, predicate: PRODUCES}\n'
                    '  - {id: e4, from: A, to: Z, predicate: BOGUS}\n'
                    '  - {id: e5, from: A, to: "plugin:lint", predicate: EXTNDS}\n')
    found = sorted((p.line, p.field, p.code) for p in check_dag(path)[1])
    assert found == [(8, "edges[1]", "missing"), (8, "edges[1].id", "duplicate-id"),
                     (9, "edges[2].predicate", "enum"), (9, "edges[2].to", "dangling"),
                     (10, "edges[3].predicate", "enum")], found


def test_a_dag_path_that_is_a_device_is_refused_in_one_line_and_a_pipe_is_read(tmp_path, orch):
    """`--dag /dev/zero` read until memory ran out; a pipe (`--dag <(make-plan)`) is a plan like a file, and a
    file with Windows line ends reads as it did."""
    done = orch("validate", "--dag", "/dev/zero", cwd=tmp_path)
    assert done.rc == 2 and "/dev/zero: is a device or socket, not a DAG file" in done.err, done
    assert "Traceback" not in done.err
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    text = b'topic: t\r\nnodes:\r\n  - {id: A, file_surface: [a], worker: "true"}\r\n'
    writer = threading.Thread(target=fifo.write_bytes, args=(text,))
    writer.start()
    done = orch("validate", "--dag", fifo, cwd=tmp_path)
    writer.join()
    assert done.rc == 0 and "valid:" in done.out, done
    crlf = tmp_path / "dag.yaml"
    crlf.write_bytes(text.replace(b'"true"}', b'"true", bad: 1}'))
    done = orch("validate", "--dag", crlf, cwd=tmp_path)
    assert done.rc == 1 and f"{crlf}:3:" in done.out + done.err, done
