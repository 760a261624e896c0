"""README, Coding agents: "a preset of your own subclasses `orchestrate.workers.agents.preset.Preset` and is
installed as an entry point in `orchestrate.workers`". A third-party preset, installed as a throwaway
distribution (tests/plugin_site.py), is listed as a worker plugin, validates as an `agent:`, runs a campaign
against a fake agent executable through the same runner as the built-in presets, and inherits their handling
of an agent that is not logged in."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from orchestrate.workers.agents.run import ENVIRONMENT
from tests.engine_helpers import campaign_repo, journal

# The preset a third party would ship: nothing but what README and preset.py ask a subclass for.
PRESET = '''\
from orchestrate.workers.agents.preset import Call, Preset, count, last_object


class Echoer(Preset):
    name = "echoer"
    binary = "echoer-agent"
    install = "pip install echoer-agent"
    login = "echoer-agent login"
    version = "0.3"

    def call(self, brief, brief_path, model, args):
        return Call(["echoer-agent", "--task-file", brief_path, *(["--llm", model] if model else []), *args],
                    stdin=None)

    def usage(self, stdout):
        found = last_object(stdout)
        if found is None:
            return None
        return {"input_tokens": count(found.get("in")), "output_tokens": count(found.get("out")),
                "cost_usd": float(found.get("usd", 0.0)), "model": str(found.get("llm", ""))}
'''

# A fake `echoer-agent`: records its argv, edits the worktree, prints its structured output.
AGENT = """#!/bin/sh
printf '%s\\n' "$@" > '{record}/argv'
echo edited-by-echoer > agent.txt
echo '{{"in": 700, "out": 30, "usd": 0.02, "llm": "m2"}}'
"""
NOT_LOGGED_IN = "#!/bin/sh\necho 'Error: not logged in' >&2\nexit 1\n"

DAG = """\
topic: own
nodes:
  - id: N1
    title: one
    depends_on: []
    file_surface: [agent.txt]
    sandbox: none
    worker: {agent: echoer, model: m2, args: [--turns, "4"]}
    evaluators: [{name: edited, run: "grep -q edited-by-echoer agent.txt"}]
"""


def _install(site, monkeypatch) -> None:
    """The preset as an installed distribution, visible to this process and to the workers it starts."""
    module = f"plug_{site.token}_echoer"
    site.modules.append(module)
    (site.root / f"{module}.py").write_text(PRESET)
    info = site.root / "echoer_preset-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echoer-preset\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[orchestrate.workers]\nechoer = {module}:Echoer\n")
    import importlib
    importlib.invalidate_caches()
    # the agent runner is a process of its own (`python -m orchestrate.workers.agents echoer`)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site.root), os.environ.get("PYTHONPATH")])))


def _agent_on_path(tmp_path: Path, monkeypatch, script: str) -> Path:
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    (bindir / "echoer-agent").write_text(script.format(record=record))
    (bindir / "echoer-agent").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_an_own_preset_is_listed_as_a_worker_plugin_with_the_agent_capabilities(site, monkeypatch, orch, tmp_path):
    _install(site, monkeypatch)
    listed = orch("plugins", "--json", cwd=tmp_path)
    assert listed.rc == 0, listed.out + listed.err
    rows = [r for r in json.loads(listed.out) if r["name"] == "echoer"]
    assert [(r["kind"], r["state"], r["dist"], r["capabilities"]) for r in rows] == [
        ("worker", "ok", "echoer-preset", ["agent", "agent:echoer"])]


def test_an_own_preset_validates_and_runs_a_campaign_like_a_built_in_one(site, monkeypatch, orch, tmp_path):
    _install(site, monkeypatch)
    record = _agent_on_path(tmp_path, monkeypatch, AGENT)
    repo = campaign_repo(tmp_path, DAG, "#!/bin/sh\n")
    checked = orch("validate", cwd=repo)
    assert checked.rc == 0, checked.out + checked.err
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert repo.git("show", "campaign/own:agent.txt") == "edited-by-echoer"  # landed, judged, merged
    run_dir = repo / ".scratch" / "runs" / "own" / "N1"
    # the command line is the subclass's own `call`, given the brief's path, the model and the args
    assert (record / "argv").read_text().splitlines() == [
        "--task-file", str(run_dir / "brief-1.md"), "--llm", "m2", "--turns", "4"]
    worker = next(e["context"] for e in journal(repo, "own")
                  if e["kind"] == "result" and e["context"].get("effect") == "worker-start")
    assert worker.get("usage") == {"input_tokens": 700, "output_tokens": 30, "cost_usd": 0.02, "model": "m2"}


def test_an_own_preset_inherits_the_not_logged_in_handling(site, monkeypatch, tmp_path):
    _install(site, monkeypatch)
    _agent_on_path(tmp_path, monkeypatch, NOT_LOGGED_IN)
    brief = tmp_path / "brief.md"
    brief.write_text("do it\n")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "orchestrate.workers.agents", "echoer"], cwd=work,
                          env=dict(os.environ, ORCH_BRIEF=str(brief)), capture_output=True, text=True)
    assert done.returncode == ENVIRONMENT, done.stderr
    assert done.stderr.splitlines()[-1] == ("orchestrate: agent preset echoer: `echoer-agent` reports it is not "
                                            "logged in; log in with `echoer-agent login` (as the user orchestrate "
                                            "runs as), then `orchestrate resume`")
