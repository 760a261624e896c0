"""A file git reads rules from speaks for more than itself, so a surface grants a change to one only with all it
reaches: a `.gitattributes` or `.gitignore` with its whole folder, the top `.gitmodules` with `**`.
rv71: `src/*` let a node merge `src/.gitattributes`, which gave the user's checkout of `src/lib/x.txt`
(outside that surface) CRLF line ends. rv72: a `src/.gitignore` so merged hid a later node's new file under
`src/lib/` from staging (its work silently dropped), and a `.gitmodules` under `*` re-pointed a submodule."""
from __future__ import annotations

import pytest

from gates import reconcile_node
from orchestrate.dag.rule_files import needed
from orchestrate.dag.surface import covering, reach_note
from tests.engine_helpers import campaign_repo, journal


@pytest.mark.parametrize("tokens, path, granted", [
    (["src/*"], "src/.gitattributes", None),
    (["src/.gitattributes"], "src/.gitattributes", None),
    (["src/*"], "src/.GitAttributes", None),  # what a case-insensitive checkout reads as the same file
    (["src/*"], "src/.gitattributes.", None),
    (["src/"], "src/.gitattributes", "src/"),
    (["src"], "src/lib/.gitattributes", "src"),
    (["src/**"], "src/.gitattributes", "src/**"),
    (["s*/**"], "src/.gitattributes", "s*/**"),
    (["src/*/"], "src/lib/.gitattributes", "src/*/"),
    (["src/**/*.txt"], "src/.gitattributes", None),
    ([".gitattributes"], ".gitattributes", None),
    (["*"], ".gitattributes", None),
    (["**"], ".gitattributes", "**"),
    (["src/*"], "src/a.gitattributes", "src/*"),  # only the file git reads rules from
])
def test_a_gitattributes_is_granted_only_with_its_whole_folder(tokens, path, granted):
    assert covering(tokens, path) == granted


@pytest.mark.parametrize("path, token", [("src/.gitattributes", "src/"), (".gitattributes", "**"),
                                         ("src/a.py", "src/a.py")])
def test_what_a_surface_must_gain_to_change_a_path(path, token):
    assert needed(path) == token
    assert covering([token], path) == token


def test_the_gate_says_why_a_glob_that_lists_the_file_does_not_grant_it():
    verdict = reconcile_node.check("N", ["src/*"], [("A", "src/.gitattributes"), ("A", "src/a.py")])
    assert verdict.code == 1 and verdict.data["undeclared"] == ["src/.gitattributes"]
    assert "every file in src/" in verdict.items[0].detail and "`src/`" in verdict.items[0].detail
    outside = reconcile_node.check("N", ["docs/"], [("A", "src/.gitattributes")])
    assert "outside the declared surface of N" in outside.items[0].detail


def test_validate_notes_a_token_that_names_a_gitattributes(tmp_path, orch):
    assert reach_note("src/") is None and reach_note("**") is None
    dag = tmp_path / "dag.yaml"
    dag.write_text("topic: t\nworkers: {sh: x}\nnodes:\n  - id: A\n    discipline: sh\n"
                   "    file_surface:\n      - src/.gitattributes\n")
    result = orch("validate", "--dag", str(dag))
    assert result.rc == 0, result.out + result.err
    assert f"note: {dag}:7: nodes.A.file_surface: `src/.gitattributes` grants no change" in result.err
    assert "so changing it takes `src/`" in result.err


# The worker writes the rules file `plan` names, each reaching src/lib/x.txt or the submodule outside an
# `src/*` or `*` surface, and a file of its own; or (ask) first asks for src/.gitattributes.
WORKER = r"""#!/bin/sh
set -eu
case "$(cat plan)" in
  src/.gitattributes) printf 'lib/*.txt text eol=crlf\n' > src/.gitattributes ;;
  src/.gitignore) printf 'lib/\n' > src/.gitignore ;;
  .gitmodules) printf '[submodule "vendor"]\n\tpath = vendor\n\turl = /tmp/elsewhere\n' > .gitmodules ;;
  ask) if printf '%s\n' "$ORCH_SURFACE" | grep -qx 'src/'; then printf 'lib/*.txt -diff\n' > src/.gitattributes
       else printf '{"freeze": "surface-exceed", "paths": ["src/.gitattributes"]}' > "$ORCH_RETURN"; exit 0; fi ;;
esac
echo a > src/a.txt
"""

DAG = """\
topic: rules
schedule: {schedule}
workers: {{sh: "./work.sh"}}
defaults: {{timeout: 60, max_attempts: 1}}
nodes:
  - {{id: A, title: a, file_surface: ["{token}"], discipline: sh}}
"""


def _run(tmp_path, orch, plan: str, token: str, schedule: str = "eager"):
    repo = campaign_repo(tmp_path, DAG.format(schedule=schedule, token=token), WORKER,
                         files={"plan": plan + "\n", "src/lib/x.txt": "plain\n"})
    return repo, orch("run", "--no-interactive", cwd=repo)


def _merged(repo) -> list[str]:
    return repo.git("ls-tree", "-r", "--name-only", "campaign/rules").split()


@pytest.mark.parametrize("path, token, reach", [
    ("src/.gitattributes", "src/*", "how git checks out, diffs and merges every file in src/"),
    ("src/.gitignore", "src/*", "which new files in src/ `git add` takes"),
    (".gitmodules", "*", "where every submodule of the repository is fetched from"),
])
@pytest.mark.parametrize("schedule", ["eager", "layered"])
def test_a_rules_file_under_a_shallow_glob_is_not_merged(tmp_path, orch, schedule, path, token, reach):
    repo, result = _run(tmp_path, orch, path, token, schedule)
    assert result.rc == 75 and "seam realignment for node A" in result.out, result.out + result.err
    assert path not in _merged(repo)
    gate = [e["context"] for e in journal(repo, "rules")
            if e["kind"] == "gate" and e["context"].get("gate") == "reconcile-node"]
    assert gate and gate[-1]["code"] == 1
    assert [line for line in gate[-1]["items"] if "UNDECLARED" in line and path in line and reach in line]


@pytest.mark.parametrize("path, token", [("src/.gitattributes", "src/"), ("src/.gitignore", "src/**"),
                                         (".gitmodules", "**")])
def test_the_same_file_merges_with_all_it_reaches(tmp_path, orch, path, token):
    repo, result = _run(tmp_path, orch, path, token)
    assert result.rc == 75 and "seam final-acceptance" in result.out, result.out + result.err
    assert {path, "src/a.txt"} <= set(_merged(repo))


def test_a_request_for_a_gitattributes_widens_the_surface_to_its_folder(tmp_path, orch):
    repo, result = _run(tmp_path, orch, "ask", "src/*")
    assert result.rc == 75 and "seam final-acceptance" in result.out, result.out + result.err
    widened = [e["context"]["reason"] for e in journal(repo, "rules") if e["kind"] == "dag"]
    assert widened == ["WIDEN A: the worker asked for src/.gitattributes (as src/, all it reaches)"], widened
    assert "src/.gitattributes" in _merged(repo)


@pytest.mark.parametrize("tokens, path, granted", [
    (["src/*"], "src/.gitignore", None),  # it hides what a later node under src/lib/ leaves to be staged
    (["src/"], "src/.gitignore", "src/"),
    (["*"], ".gitmodules", None),  # it says where every gitlink's submodule is fetched from
    ([".gitmodules"], ".gitmodules", None),
    (["**"], ".gitmodules", "**"),
    (["src/*"], "src/.gitmodules", "src/*"),  # git reads only the top one
])
def test_other_files_git_reads_rules_from_are_granted_with_all_they_reach(tokens, path, granted):
    assert covering(tokens, path) == granted


# Names a Windows or macOS checkout opens as a rules file, as git's own NTFS and HFS+ path checks read them
@pytest.mark.parametrize("path", ["src/GITATT~1", "src/gitatt~4. ", "src/gi7d29~3", "src/gi7d~123", "src/gitign~2",
                                  "src/gi250a~9", "src/.gitignore:stream", "src/.git\u200cignore",
                                  "src/.gitattributes\ufeff", "GITMOD~1", "gi7eba~1", ".gitmodules:x"])
def test_other_names_of_a_rules_file_are_granted_with_all_it_reaches(path):
    folder = path.rpartition("/")[0]
    assert covering(["src/*", "*"], path) is None
    assert covering([f"{folder}/" if folder else "**"], path)


@pytest.mark.parametrize("path", ["src/gitatt~5", "src/gi7d29~0", "src/gi7d2x~1", "src/gitmod~1", "src/x.gitignore",
                                  "src/.gitignore2", "src/gitattributes", "src/gi7d29~12"])
def test_names_no_checkout_reads_as_a_rules_file_are_plain_files(path):
    assert covering(["src/*"], path) == "src/*"


def test_a_payload_naming_a_rules_file_under_a_shallow_surface_says_what_it_takes(tmp_path, orch):
    """rv73: `.gitignore` in A's surface, the edge was refused as `.gitignore is outside the file_surface of A`."""
    dag = tmp_path / "dag.yaml"
    dag.write_text("topic: t\nworkers: {sh: x}\nnodes:\n"
                   "  - {id: A, discipline: sh, file_surface: [.gitignore, src/*]}\n"
                   "  - {id: B, discipline: sh, file_surface: [docs/]}\n"
                   "edges:\n  - {id: e1, from: A, to: B, predicate: PRODUCES, payload: [.gitignore, src/.gitattributes, lib/x]}\n")
    result = orch("validate", "--dag", str(dag))
    assert result.rc == 1
    assert "payload[0]: A cannot produce .gitignore: a .gitignore chooses which new files in the repository" in result.out
    assert "its file_surface grants only some of that (it takes `**`)" in result.out
    assert "payload[1]: A cannot produce src/.gitattributes: a .gitattributes chooses" in result.out
    assert "payload[2]: lib/x is outside the file_surface of A" in result.out


def test_the_worktree_gate_reads_untracked_names_git_would_quote(tmp_path):
    """rv73: `ls-files --others` without -z gave `"donn\\303\\251es/.gitignore"`, matched by no token (not even
    `données/`) and not known as a rules file."""
    import subprocess
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "base"], check=True)
    (tmp_path / "données").mkdir()
    (tmp_path / "données" / ".gitignore").write_text("*.log\n")
    (tmp_path / "données" / "é.txt").write_text("x\n")
    changes = reconcile_node.changes_between(tmp_path, "HEAD")
    assert changes == [("A", "données/.gitignore"), ("A", "données/é.txt")]
    assert reconcile_node.check("N", ["données/"], changes).code == 0
    assert reconcile_node.check("N", ["données/*"], changes).data["undeclared"] == ["données/.gitignore"]
