"""rv68: `orchestrate gate NAME` run by hand (README and its own --help: `orchestrate gate reconcile-node --dag
.ledger/state/dag.yaml --node D1 --base main --head node/demo/D1`) prints the verdict's lines raw
(gates/shared/gatecli.py `emit`): a file name from the worker's branch reaches the person's terminal as live
control sequences, though `run`, `status`, `why` and `doctor` show the same names escaped (d7aa77f, eb28cb9)."""
from __future__ import annotations

from tests.engine_helpers import campaign_repo, cli
from tests.test_worker_words_on_the_terminal import HALT_DAG, NAME_WORKER, _no_controls


def test_a_gate_run_by_hand_shows_a_file_name_from_a_workers_branch_escaped(tmp_path):
    repo = campaign_repo(tmp_path, HALT_DAG, NAME_WORKER)
    cli(repo, "run")
    done = cli(repo, "gate", "reconcile-node", "--dag", ".ledger/state/dag.yaml", "--node", "N1", "--base", "main",
               "--head", "node/t/N1")
    assert "evil" in done.stdout + done.stderr, done.stdout + done.stderr
    bad = _no_controls(done.stdout + done.stderr)
    assert not bad, "a file name from the worker's branch printed raw by `gate reconcile-node`:\n" + "\n".join(bad)
