"""DERIVE: validate the DAG, derive layers, open campaign/<topic> at the baseline and the recorder's sketch."""
from __future__ import annotations

import shutil
from pathlib import Path

from orchestrate import git
from orchestrate.atomic import write_atomic
from orchestrate.engine.context import Context
from orchestrate.engine.states import Outcome
from orchestrate.errors import DagInvalid, UsageError
from orchestrate.recorder import sketch
from orchestrate.recorder.approved import file_hash
from orchestrate.recorder.journal import Recorder, now


def handle(ctx: Context) -> Outcome:
    from orchestrate.dag.load import load_dag
    from orchestrate.recorder.topics import brief_dir
    source = Path(ctx.campaign.dag_path)
    # run --dag .ledger/state/<old>/dag.yaml: that copy's briefs are in the folder its campaign recorded, and
    # this campaign records the same folder, so its dispatches and reloads look there too
    recorded = brief_dir(source)
    briefs = recorded or source.resolve().parent
    try:
        dag = load_dag(source, topic=ctx.topic_override, brief_dir=recorded)
    except DagInvalid as exc:
        ctx.problems = exc.problems
        ctx.halt_reason = f"the DAG {source} is invalid; nothing was written"
        return Outcome.INVALID
    from orchestrate.engine import settings
    if found := settings.problems(ctx.layout):
        ctx.problems = found
        ctx.halt_reason = f"{ctx.layout.config} is invalid; nothing was written"
        return Outcome.INVALID
    from orchestrate.engine.unsupported import gaps
    if missing := gaps(dag):
        ctx.problems = missing
        ctx.halt_reason = f"the DAG {source} is valid but uses what this engine cannot run yet; nothing was written"
        return Outcome.INVALID
    from orchestrate.engine import plugin_gates as plugingates
    ctx.gate_plugins, unusable = plugingates.problems(dag, lambda m: ctx.out.always(f"warning: {m}"))  # before any write
    if unusable:
        ctx.problems = unusable
        ctx.halt_reason = f"the DAG {source} names a gate plugin that cannot be used; nothing was written"
        return Outcome.INVALID
    topic = dag.topic
    baseline = _baseline(ctx.root, dag)
    copy = ctx.layout.state(topic) / "dag.yaml"
    ctx.recorder = Recorder(ctx.layout.ledger, topic).pin()
    found = ctx.recorder.read()
    ctx.recorder.resume_seq(found)  # intents of a DERIVE a crash cut off, if any
    if not found:  # the campaign starts: nothing in its checkpoints folder is its own
        from orchestrate.recorder import checkpoints
        checkpoints.settle(ctx.layout.ledger, topic, {}, lambda m: ctx.out.always(f"warning: {m}"))
    ctx.campaign.topic = topic
    branch = f"campaign/{topic}"
    ctx.emit("intent", {"effect": "branch-create", "branch": branch, "at": baseline})
    existing = git.rev_parse(ctx.root, f"refs/heads/{branch}")
    if existing is None:
        git.create_branch(ctx.root, branch, baseline)
    elif existing != baseline:  # a DERIVE cut off by a crash leaves the branch at the baseline, nothing else
        raise UsageError(f"{branch} exists and is not at the baseline {baseline[:12]}",
                         hint="choose another topic with --topic")
    ctx.emit("result", {"effect": "branch-create", "branch": branch, "at": baseline})
    copy.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != copy.resolve():
        shutil.copyfile(source, copy)
    layers = dag.layers()
    mode = ctx.mode_override or dag.mode
    ctx.emit("open", {"topic": topic, "dag_path": str(copy), "brief_dir": str(briefs),
                      "dag_hash": file_hash(copy), "mode": mode, "schedule": ctx.schedule_override or dag.schedule, "baseline": baseline, "branch": branch,
                      "layers": layers, "tip": baseline, "source": str(source),
                      # the run's --jobs, for the report's lower bound on the makespan (None: unbounded, Dask)
                      "jobs": getattr(ctx.executor, "jobs", None), "jobs_given": ctx.jobs_given})
    ctx.reload_dag()
    write_atomic(ctx.layout.active_dag, str(copy) + "\n")
    opened = now()
    path = sketch.path_for(ctx.layout.ledger, topic, opened)
    sketch.open_sketch(path, {"TOPIC": topic, "STATUS": "RUN_LAYER", "MODE": mode.upper(), "OPENED": opened,
                              "BASELINE": baseline, "BRANCH": branch, "DAG": str(copy),
                              "LAYERS": layers},
                       f"Campaign `{topic}` over {len(dag.nodes)} node(s) in {len(layers)} layer(s), "
                       f"from {source}, started at {baseline[:12]}.")
    ctx.subject = f"log: open {topic} ({len(dag.nodes)} nodes, {len(layers)} layers)"
    return Outcome.VALID


def _baseline(root: Path, dag) -> str:
    """The commit `base:` names, or a refusal at the DAG's `base:` line as `run` gives it before DERIVE
    (the ref can be deleted between that check and this one; git's own words name no file).

    Only a new campaign gets here: resume never runs DERIVE again, since the `open` entry (and with it the
    baseline every later state uses) is held until DERIVE's transition is recorded, and resume refuses a
    campaign that was never opened. A base deleted after the campaign opened is therefore never looked up."""
    from orchestrate.dag.load import base_problem
    if (wrong := base_problem(dag, root)) is not None:
        raise UsageError(str(wrong))
    return git.resolve(root, dag.base)
