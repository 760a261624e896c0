"""rv67: `orchestrate graph --format text` printed a plan's condition text raw: an ESC written in the plan
(YAML "\\e") retitles the terminal of whoever draws the plan. `validate` accepts the plan."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli

DAG = r"""topic: g
workers: {sh: "true"}
nodes:
  - {id: N1, title: one, file_surface: [a], discipline: sh, outputs: [go]}
  - {id: N2, title: two, file_surface: [b], discipline: sh}
edges:
  - {id: e1, from: N1, to: N2, predicate: TRIGGERS, type: conditional, when: "src.outputs.go == '\e]2;PWNED\a'"}
"""


def test_graph_text_escapes_control_characters(tmp_path):
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\n")
    assert cli(repo, "validate").returncode == 0
    done = cli(repo, "graph", "--format", "text")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout, repr(done.stdout)
