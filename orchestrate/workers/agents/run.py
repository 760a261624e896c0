"""One agent attempt: `python -m orchestrate.workers.agents NAME [--model M] [-- ARGS...]`, run by the
executor as the node's worker command, in its worktree, with the ORCH_* environment.

It reads the brief (`$ORCH_BRIEF`, which on a rework already says what failed), runs the agent through
proc, copies the agent's output into the attempt's log, writes `$ORCH_USAGE` from the agent's structured
output, and exits with the agent's status, or with ENVIRONMENT (69) when the agent is missing, not logged
in or no preset at all, its last line then starting `orchestrate: ` and naming the preset and what to
install or log into: a person must act before another attempt can do better.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import signal
import sys
from pathlib import Path

from orchestrate import proc
from orchestrate.atomic import write_atomic
from orchestrate.errors import ProcError
from orchestrate.workers.agents import BUILTIN
from orchestrate.workers.agents.preset import AUTH, Preset

ENVIRONMENT = 69  # EX_UNAVAILABLE: the agent cannot run here until a person installs or logs in
_TOKENS = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
# Rewrites every push URL to a scheme git has no helper for: a push fails, a fetch still works.
_NO_PUSH = ("url.orchestrate-push-disabled://.pushInsteadOf", "")


def load(name: str) -> Preset:
    """The built-in preset, else an installed `orchestrate.workers` plugin of that name that is a preset."""
    if name in BUILTIN:
        module, cls = BUILTIN[name].split(":")
        return getattr(importlib.import_module(module), cls)()
    from orchestrate import plugins
    plugin = plugins.require(plugins.discover(("worker",)), "worker", name)
    if not isinstance(plugin.obj, Preset):
        raise plugins.PluginError(f"worker plugin '{name}' is not an agent preset; name it as `worker:` "
                                  "capabilities instead, or install a preset")
    return plugin.obj


def _parse(argv: list[str]) -> argparse.Namespace:
    """NAME [--model M] [-- ARGS...]: everything after `--` goes to the agent untouched."""
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="python -m orchestrate.workers.agents")
    parser.add_argument("name")
    parser.add_argument("--model")
    ns = parser.parse_args(argv[:cut])
    ns.args = argv[cut + 1:]
    return ns


def agent_env() -> dict[str, str]:
    """What the agent gets on top of ours: pushing made impossible (the agent is never the one to publish)."""
    from orchestrate import inert
    return inert.appended((_NO_PUSH,))


def write_usage(usage: dict | None) -> None:
    target = os.environ.get("ORCH_USAGE")
    if usage is not None and target:
        write_atomic(Path(target), json.dumps({"usage": usage}, sort_keys=True) + "\n")


def _say(line: str) -> None:
    print(f"orchestrate: {line}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    ns = _parse(argv)
    try:
        preset = load(ns.name)
    except Exception as exc:  # noqa: BLE001 - an unknown or broken preset is an environment problem
        _say(f"agent preset {ns.name}: {getattr(exc, 'message', None) or exc}")
        return ENVIRONMENT
    if shutil.which(preset.binary) is None:
        _say(preset.missing())
        return ENVIRONMENT
    brief_path = os.environ.get("ORCH_BRIEF", "")
    try:
        brief = open(brief_path, encoding="utf-8").read() if brief_path else ""
    except OSError as exc:
        _say(f"agent preset {preset.name}: cannot read the brief {brief_path}: {exc.strerror}")
        return 2
    call = preset.call(brief, brief_path, ns.model, list(ns.args))
    for name in _TOKENS:  # a GitHub token would let the agent open pull requests in the user's name
        os.environ.pop(name, None)
    # the executor ends an attempt (timeout, Ctrl-C) with SIGTERM: unwinding lets proc kill the agent's group
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        done = proc.run(call.argv, env=agent_env(), input=call.stdin)
    except ProcError as exc:
        _say(f"{preset.missing()} ({exc.message})")
        return ENVIRONMENT
    # the attempt's log holds both streams: each ends its last line, so a line of ours below starts a line,
    # which is how the engine tells "the agent cannot run here" (exit 69) from a failed attempt
    for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
        stream.write(text if not text or text.endswith("\n") else text + "\n")
        stream.flush()
    write_usage(preset.usage(done.stdout))
    rc = done.rc
    reported = preset.reported_error(done.stdout)
    if reported and rc == 0:
        rc = 1
    kind = preset.failure(rc, done.stderr, reported)
    if kind:
        _say(preset.explain(kind))
        return ENVIRONMENT if kind == AUTH else rc
    if reported:
        _say(f"agent preset {preset.name}: {reported}")
    return rc
