"""Validating a DAG of thousands of nodes says so on a terminal (and nowhere else); control characters in
surface tokens and ids are refused and never reach the terminal raw."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys

ORCH = [sys.executable, "-m", "orchestrate"]


def _big(path, n: int) -> None:
    nodes = [{"id": f"N{i}", "depends_on": [f"N{i - 1}"] if i % 50 else [], "file_surface": [f"pkg{i}/"],
              "discipline": "core"} for i in range(n)]
    path.write_text(json.dumps({"topic": "big", "workers": {"core": "true"}, "nodes": nodes}))


def _validate_on_a_terminal(dag) -> tuple[int, str, str]:
    """stderr on a pseudo-terminal, stdout on a pipe: what each received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(ORCH + ["validate", "--dag", str(dag)], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, cwd=dag.parent)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the last writer closed: EIO on Linux
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode()
    proc.stdout.close()
    os.close(master)
    return proc.wait(timeout=60), out, seen.decode()


def test_a_dag_over_2000_nodes_shows_progress_on_a_terminal_and_wipes_it(tmp_path):
    dag = tmp_path / "big.json"
    _big(dag, 2500)
    rc, out, err = _validate_on_a_terminal(dag)
    assert rc == 0 and out.startswith(f"valid: {dag} (2500 nodes, ")
    assert "big.json: checking 2,500 nodes (" in err
    assert err.endswith("\r\x1b[K")  # the line is wiped: what follows starts on a clean line


def test_no_progress_off_a_terminal_or_for_a_small_dag(tmp_path):
    big = tmp_path / "big.json"
    _big(big, 2500)
    piped = subprocess.run(ORCH + ["validate", "--dag", str(big)], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
    small = tmp_path / "small.json"
    _big(small, 300)
    rc, out, err = _validate_on_a_terminal(small)
    assert rc == 0 and "checking" not in err and "reading" not in err


def test_control_characters_in_surface_tokens_and_ids_are_refused_and_echoed_escaped(tmp_path, orch):
    dag = tmp_path / "ctl.yaml"
    dag.write_text('topic: t\nworkers: {sh: "true"}\nnodes:\n'
                   '  - {id: "A\\e[31m", file_surface: ["a\\e[2Jb"], discipline: sh}\n'
                   '  - {id: B, file_surface: ["tab\\there", "fine/"], discipline: sh}\n')
    r = orch("validate", "--dag", dag, cwd=tmp_path)
    assert r.rc == 1
    shown = r.out + r.err
    assert "\x1b" not in shown and "\t" not in shown
    assert "'a\\x1b[2Jb' contains the control character '\\x1b'" in shown
    assert "'tab\\there' contains the control character '\\t'" in shown
    assert "`A\\x1b[31m` is not a valid id" in shown
    as_json = json.loads(orch("validate", "--dag", dag, "--json", cwd=tmp_path).out)
    assert {p["code"] for p in as_json} >= {"surface-token", "id"}


def test_the_surface_rule_itself():
    from orchestrate.dag.surface import token_problem
    assert "control character '\\x7f'" in token_problem("a\x7fb")
    assert "control character '\\x85'" in token_problem("a\x85b")
    assert token_problem("docs/é.md") is None  # printable non-ASCII is a path like any other
