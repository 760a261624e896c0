"""What every handler gets: settings, the DAG, the campaign state, the recorder, the executor, output."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from orchestrate.dag.model import Dag
from orchestrate.recorder import approved
from orchestrate.recorder.campaign import Campaign, apply
from orchestrate.recorder.journal import ENGINE, Recorder
from orchestrate.recorder.paths import Layout
from orchestrate.report.live import Reporter
from orchestrate.workers.local import Executor

WRITE_AHEAD = frozenset({"intent", "result"})
# What ends a batch of held entries, written in one append just before its commit: a transition, or the close of
# resume's repairs, which are committed before the run goes on and may hold an attempt started again (rv81)
BATCH_ENDS = frozenset({"transition", "repaired"})
_COUNTING = threading.Lock()


@dataclass
class Context:
    layout: Layout
    campaign: Campaign
    recorder: Recorder | None
    executor: Executor
    out: Reporter
    dag: Dag | None = None
    topic_override: str | None = None
    mode_override: str | None = None
    answers: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    subject: str = ""  # detail for the next transition's recorder commit
    halt_reason: str = ""
    audited: str = ""  # the campaign head the adherence audit last passed (CLOSE audits it all again)
    audited_merges: int = 0  # how many merges that audit covered
    checkpointed: int = 0  # the journal entry the last checkpoint covers
    gate_plugins: dict | None = None  # the gate plugins the DAG names, loaded on first use
    watch: object = None  # workers.fingerprint.Fingerprint taken before this layer's workers started
    blamed: dict = field(default_factory=dict)  # node -> what it changed outside its node, while running
    sealed: set = field(default_factory=set)  # nodes whose attempt this runner started unable to write the checkout
    evaluated: dict = field(default_factory=dict)  # (node, attempt) -> its evaluators' verdict, run ahead
    evaluating: dict = field(default_factory=dict)  # (node, attempt) -> (future, judge_runs then): engine/evaluations.py
    judge_pool: object = None  # the threads evaluators run ahead in (eager)
    judge_stop: object = None  # threading.Event: set, no evaluator run ahead starts any more
    judge_runs: int = 0  # processes judging started (workers/containment.judging): the watch looks after them
    judged: Callable[[list, int], None] | None = None  # the watch's look after judging (engine/loop.py sets it)
    unread: dict = field(default_factory=dict)  # (node, head) -> workers that returned while its files went
    #                                             uncompared (workers/siblings.py `before_reading`)
    refuted: dict = field(default_factory=dict)  # eager: node -> the head its premise was found stale against
    known_clean: dict = field(default_factory=dict)  # node -> (judged head, the campaign head it was last known
    #                                                   clean against: probed, or no merge since could conflict)
    routed: set = field(default_factory=set)  # eager: pending nodes whose incoming edges were decided
    announced: set = field(default_factory=set)  # ids of the seams this run has told a person about
    warned: set = field(default_factory=set)  # what this run has warned about once (an old plugin, an edited `when`)
    schedule_override: str | None = None  # --schedule
    jobs_given: bool = False  # --jobs was given (resume keeps it; a width the machine chose it chooses anew)
    spending: object = None  # engine/budget.py's Spending: the journal's usage and budget raises, folded once
    fill_slots: bool = False  # resumed in AWAIT: nodes that wait for a slot start first (handlers/await_.py)
    launching: str = ""  # the node whose start() is asking the executor now (it says itself how that went)

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def topic(self) -> str:
        return self.campaign.topic

    def emit(self, kind: str, context: dict[str, Any], *, source_entity: str = ENGINE,
             source_type: str = "engine", derived_from: Iterable[str] = ()) -> dict[str, Any]:
        """Journal one event and fold it into the campaign state.

        Intents and results of effects outside the recorder are written at once (write-ahead); every
        other event is held until the state's transition is recorded, so a crash mid-state leaves the
        journal at the last transition and the state's handler simply runs again on resume.
        """
        assert self.recorder is not None, "no event can be recorded before the campaign is opened"
        entry = self.recorder.event(kind, context, source_entity=source_entity, source_type=source_type,
                                    derived_from=derived_from, hold=kind not in WRITE_AHEAD)
        apply(self.campaign, entry)
        return entry

    def judging_ran(self) -> None:
        """Count a process judging started (`judge_runs`), from whichever thread started it: evaluators run
        ahead in threads while the loop's thread judges too, and a count that lost one of two increments
        made at once could equal a baseline taken between them, and a run would go unlooked-at."""
        with _COUNTING:
            self.judge_runs += 1

    def runner_tags(self) -> dict[str, str]:
        """What every process this runner starts for the campaign carries in its environment (workers,
        evaluators, campaign checks), so a resume after this runner died can find and stop them."""
        return {"ORCH_TOPIC": self.topic, "ORCH_RUNNER": str(os.getpid())}

    def reads_files(self):
        """node id -> will its judging read its worktree's files (engine/judge.py)."""
        from orchestrate.engine import judge
        return judge.reads_files(self)

    def node_state(self, node_id: str):
        return self.campaign.nodes[node_id]

    @property
    def dag_file(self) -> Path:
        return Path(self.campaign.dag_path)

    def reload_dag(self, *, edited: bool = False) -> Dag:
        """The plan as recorded. A DAG file edited behind the engine's back (a worker widening its own
        surface) is never honoured here: only the dag-amendment seam or the engine's own amendment
        (`edited=True`) adopt an edit; until then the recorded version is read from the recorder."""
        self.dag = approved.load(self.layout.ledger, self.dag_file, self.campaign, edited=edited)
        return self.dag

    @property
    def brief_dir(self) -> Path | None:
        return Path(self.campaign.brief_dir) if self.campaign.brief_dir else None
