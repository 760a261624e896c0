"""Agent presets: each builds its agent's documented command line (see the citations in
orchestrate/workers/agents/), and a real run with a fake agent executable on PATH (a script that records its
argv, stdin and environment, edits the worktree and prints the agent's documented JSON) lands, is judged,
and has its usage journalled."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.workers.agents import BUILTIN
from orchestrate.workers.agents.run import ENVIRONMENT, load
from tests.engine_helpers import campaign_repo, journal

BRIEF = "Brief text\nsecond line\n"
FORBIDDEN = ("--dangerously-skip-permissions", "bypassPermissions", "--yolo", "-y", "danger-full-access",
             "--auto", "--yes-always-commands")

EXPECTED = {
    "claude-code": (["claude", "-p", "PROMPT", "--output-format", "json", "--permission-mode", "acceptEdits",
                     "--disallowedTools", "Bash(git push:*),Bash(gh:*)", "--model", "m1", "--max-turns", "3"],
                    BRIEF),
    "codex": (["codex", "exec", "--sandbox", "workspace-write", "--json", "--model", "m1", "--max-turns", "3",
               "PROMPT"], BRIEF),
    "gemini": (["gemini", "-p", "PROMPT", "--output-format", "json", "--approval-mode", "auto_edit",
                "-m", "m1", "--max-turns", "3"], BRIEF),
    "aider": (["aider", "--message-file", "/b/brief-1.md", "--yes", "--no-gitignore",
               "--chat-history-file", "/b/brief-1.aider.chat.history.md",
               "--input-history-file", "/b/brief-1.aider.input.history", "--model", "m1", "--max-turns", "3"], None),
    "opencode": (["opencode", "run", "PROMPT", "--format", "json", "--model", "m1", "--max-turns", "3",
                  "--file", "/b/brief-1.md"], None),
}

# What each agent prints, in the structured format its documentation gives (see each preset's module).
OUTPUT = {
    "claude-code": '{"type": "result", "subtype": "success", "is_error": false, "result": "done", '
                   '"session_id": "s1", "total_cost_usd": 0.0125, "usage": {"input_tokens": 1000, '
                   '"cache_read_input_tokens": 300, "cache_creation_input_tokens": 20, "output_tokens": 200}, '
                   '"modelUsage": {"claude-sonnet-4-5": {"inputTokens": 1000, "outputTokens": 200, "costUSD": 0.0125}}}',
    "codex": '{"type": "thread.started", "thread_id": "t1"}\n{"type": "turn.started"}\n'
             '{"type": "turn.completed", "usage": {"input_tokens": 900, "cached_input_tokens": 100, "output_tokens": 90}}',
    "gemini": '{"response": "done", "stats": {"models": {"gemini-2.5-pro": {"api": {"totalRequests": 1}, '
              '"tokens": {"prompt": 800, "candidates": 80, "total": 880}}}}}',
    "aider": "Applied edit to agent.txt",
    "opencode": '{"type": "step_start", "part": {"type": "step-start"}}\n{"type": "text", "part": {"text": "ok"}}\n'
                '{"type": "step_finish", "part": {"type": "step-finish", "cost": 0.003, '
                '"tokens": {"total": 770, "input": 700, "output": 70}}}',
}
USAGE = {
    "claude-code": {"input_tokens": 1320, "output_tokens": 200, "cost_usd": 0.0125, "model": "claude-sonnet-4-5"},
    "codex": {"input_tokens": 900, "output_tokens": 90, "cost_usd": 0.0, "model": ""},
    "gemini": {"input_tokens": 800, "output_tokens": 80, "cost_usd": 0.0, "model": "gemini-2.5-pro"},
    "aider": None,
    "opencode": {"input_tokens": 700, "output_tokens": 70, "cost_usd": 0.003, "model": ""},
}


def _prompt(argv: list[str], expected: list[str]) -> list[str]:
    """The expected argv with PROMPT standing for the preset's fixed instruction sentence."""
    return list(argv) if "PROMPT" not in expected else [
        "PROMPT" if e == "PROMPT" else a for a, e in zip(argv, expected)]


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_preset_builds_its_documented_command_line(name):
    preset = load(name)
    call = preset.call(BRIEF, "/b/brief-1.md", "m1", ["--max-turns", "3"])
    argv, stdin = EXPECTED[name]
    assert _prompt(call.argv, argv) == argv
    assert call.stdin == stdin
    assert not set(call.argv) & set(FORBIDDEN)
    if "PROMPT" in argv:
        assert "Do not push" in call.argv[argv.index("PROMPT")]


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_preset_is_a_worker_plugin_whose_command_runs_the_runner(name):
    from orchestrate import plugins
    preset = load(name)
    assert preset.protocol_version == plugins.PROTOCOL_VERSION and callable(preset.command)
    assert f"agent:{name}" in preset.capabilities
    line = preset.command("N1", {"model": "m 1", "args": ["--x"]})
    assert line == f"{sys.executable} -m orchestrate.workers.agents {name} --model 'm 1' -- --x"


def _fake_agent(bindir: Path, name: str, record: Path, *, rc: int = 0, output: str | None = None) -> None:
    binary = load(name).binary
    script = bindir / binary
    script.write_text("#!/bin/sh\n"
                      f"printf '%s\\n' \"$@\" > '{record}/argv'\n"
                      f"cat > '{record}/stdin'\n"
                      f"env > '{record}/env'\n"
                      "echo edited-by-agent > agent.txt\n"
                      f"cat <<'JSON'\n{OUTPUT[name] if output is None else output}\nJSON\n"
                      f"exit {rc}\n")
    script.chmod(0o755)


DAG = """\
topic: {topic}
nodes:
  - id: N1
    title: one
    depends_on: []
    file_surface: [agent.txt]
    sandbox: none
    worker: {{agent: {name}, model: m1, args: [--max-turns, "3"]}}
    evaluators: [{{name: edited, run: "grep -q edited-by-agent agent.txt"}}]
"""


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_a_campaign_runs_each_preset_against_a_fake_agent(tmp_path, orch, monkeypatch, name):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, name, record)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    for token in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"):
        monkeypatch.setenv(token, "secret-token")  # none reaches the agent: publishing is never its to do
    topic = "ag" + name.replace("-", "")
    repo = campaign_repo(tmp_path, DAG.format(topic=topic, name=name), "#!/bin/sh\n")
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert repo.git("show", f"campaign/{topic}:agent.txt") == "edited-by-agent"  # landed, judged, merged
    argv, stdin = EXPECTED[name]
    run_dir = repo / ".scratch" / "runs" / topic / "N1"
    recorded = (record / "argv").read_text().splitlines()
    expected = [a.replace("/b/", f"{run_dir}/") for a in argv[1:]]
    assert _prompt(recorded, expected) == expected
    brief = (run_dir / "brief-1.md").read_text()
    assert (record / "stdin").read_text() == (brief if stdin else "")
    env = (record / "env").read_text()
    assert "secret-token" not in env and "url.orchestrate-push-disabled://.pushInsteadOf" in env
    worker = next(e["context"] for e in journal(repo, topic)
                  if e["kind"] == "result" and e["context"].get("effect") == "worker-start")
    assert worker.get("usage") == USAGE[name]
    assert OUTPUT[name].splitlines()[-1] in (run_dir / "attempt-1.log").read_text()


def _runner(tmp_path: Path, name: str, path: str) -> subprocess.CompletedProcess:
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF)
    env = dict(os.environ, PATH=path, ORCH_BRIEF=str(brief), ORCH_USAGE=str(tmp_path / "usage.json"))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "orchestrate.workers.agents", name], cwd=work, env=env,
                          capture_output=True, text=True)


def test_a_missing_agent_binary_names_the_preset_and_the_install_step(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _runner(tmp_path, "codex", str(empty))
    assert done.returncode == ENVIRONMENT
    assert "agent preset codex: `codex` is not on PATH; install it with `npm install -g @openai/codex`" in done.stderr
    assert "codex login" in done.stderr


def test_an_agent_that_is_not_logged_in_is_an_environment_error_naming_the_login(tmp_path):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, "claude-code", record, rc=1, output='{"type": "result", "subtype": "success", "is_error": true, '
                                                           '"result": "Invalid API key · Please run /login"}')
    (bindir / "claude").write_text((bindir / "claude").read_text().replace("exit 1", "printf partial >&2\nexit 1"))
    done = _runner(tmp_path, "claude-code", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == ENVIRONMENT
    assert "agent preset claude-code: `claude` reports it is not logged in; log in with `claude" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("orchestrate: agent preset claude-code: ")  # what the engine reads


def test_a_task_that_talks_about_http_401_is_not_an_auth_failure(tmp_path):
    """Only the agent's stderr and its structured error say it is not logged in, never the task's transcript."""
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    transcript = ('{"type": "result", "subtype": "success", "is_error": false, "result": "The handler now returns '
                  'HTTP 401 Unauthorized when the token is missing; tests still fail", "total_cost_usd": 0.01}')
    _fake_agent(bindir, "claude-code", record, rc=1, output=transcript)
    done = _runner(tmp_path, "claude-code", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == 1, done.stderr
    assert "not logged in" not in done.stderr


def test_gemini_exit_53_is_its_turn_limit_not_a_context_overflow(tmp_path):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, "gemini", record, rc=53, output='{"response": "", "stats": {}}')
    done = _runner(tmp_path, "gemini", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == 53
    assert "used up its turn limit" in done.stderr and "split the node" in done.stderr
    assert "context" not in done.stderr


@pytest.mark.parametrize("output, said", [
    ('{"error": {"message": "429 Too Many Requests: quota exceeded"}}', "rate limit"),
    ('{"error": {"message": "the input token count exceeds the model context window"}}', "overflowed"),
])
def test_rate_limit_and_context_overflow_are_explained(tmp_path, output, said):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, "gemini", record, rc=1, output=output)
    done = _runner(tmp_path, "gemini", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == 1
    assert "orchestrate: agent preset gemini:" in done.stderr and said in done.stderr


def test_an_error_the_agent_reports_in_its_json_fails_the_attempt(tmp_path):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, "claude-code", record, output='{"type": "result", "is_error": true, "result": "tool crashed", '
                                                      '"total_cost_usd": 0.5, "usage": {"input_tokens": 5}}')
    done = _runner(tmp_path, "claude-code", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == 1 and "tool crashed" in done.stderr
    assert '"cost_usd": 0.5' in (tmp_path / "usage.json").read_text()  # spent money is recorded even so


def test_the_agent_cannot_push(tmp_path, repo):
    """The runner's environment rewrites every push URL: a real `git push` from inside the agent fails."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "aider").write_text("#!/bin/sh\ngit push -q origin HEAD:main 2>&1; echo push-rc=$?\n")
    (bindir / "aider").chmod(0o755)
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", ORCH_BRIEF=str(brief))
    done = subprocess.run([sys.executable, "-m", "orchestrate.workers.agents", "aider"], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert "push-rc=0" not in done.stdout and "push-rc=" in done.stdout
    assert subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", "main"]).returncode != 0


def test_validate_accepts_an_agent_worker_and_rejects_mixed_forms(tmp_path, orch):
    dag = tmp_path / "dag.yaml"
    dag.write_text("""\
topic: v
nodes:
  - {id: A, title: a, depends_on: [], file_surface: [a.txt], worker: {agent: codex, model: m}}
  - {id: B, title: b, depends_on: [], file_surface: [b.txt], worker: {agent: codex, kind: human}}
  - {id: C, title: c, depends_on: [], file_surface: [c.txt], worker: {model: m, capabilities: [x]}}
""")
    result = orch("validate", "--dag", dag, cwd=tmp_path)
    assert result.rc == 1
    text = result.out + result.err
    assert "nodes.B.worker.kind" in text and "`agent` and `kind` exclude each other" in text
    assert "nodes.C.worker" in text and "add `agent: NAME`" in text
    assert "nodes.A" not in text
    from orchestrate.dag.load import load_dag
    ok = tmp_path / "ok.yaml"
    ok.write_text("topic: v\nnodes:\n  - {id: A, title: a, depends_on: [], file_surface: [a.txt], "
                  "worker: {agent: codex, model: m, args: [--x]}}\n")
    node = load_dag(ok).by_id["A"]
    assert node.worker == load("codex").command("A", {"model": "m", "args": ["--x"]})


def test_the_node_timeout_ends_the_agent_and_everything_it_started(tmp_path, orch, monkeypatch):
    """The agent runs in its own process group under the runner; the attempt's timeout still ends it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "codex").write_text("#!/bin/sh\nsh -c 'sleep 300; : orchestrate-agent-hang-marker' &\nsleep 300\n")
    (bindir / "codex").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    dag = DAG.format(topic="aghang", name="codex").replace("sandbox: none", "sandbox: none\n    timeout: 1\n"
                                                                          "    max_attempts: 1")
    repo = campaign_repo(tmp_path, dag, "#!/bin/sh\n")
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "timed out" in result.out, result.out + result.err
    alive = subprocess.run(["pgrep", "-f", "orchestrate-agent-hang-marker"], capture_output=True, text=True).stdout
    assert alive.split() == []


def test_a_preset_runs_inside_the_sandbox_where_it_works(tmp_path, orch, monkeypatch):
    from orchestrate.workers import sandbox
    if (why := sandbox.probe()) is not None:
        pytest.skip(f"bubblewrap does not work here: {why}")
    # the sandbox's /tmp is private and empty; HOME stays visible, where user-installed agents live
    bindir, record = Path(os.environ["HOME"]) / ".local" / "bin", Path(os.environ["HOME"]) / "record"
    bindir.mkdir(parents=True), record.mkdir()
    _fake_agent(bindir, "claude-code", record)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    dag = DAG.format(topic="agjail", name="claude-code").replace("sandbox: none", "sandbox: bwrap")
    repo = campaign_repo(tmp_path, dag, "#!/bin/sh\n")
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "final-acceptance" in result.out, result.out + result.err
    assert repo.git("show", "campaign/agjail:agent.txt") == "edited-by-agent"
    assert "--permission-mode\nacceptEdits" in (record / "argv").read_text()
    worker = next(e["context"] for e in journal(repo, "agjail")
                  if e["kind"] == "result" and e["context"].get("effect") == "worker-start")
    assert worker.get("usage") == USAGE["claude-code"]  # $ORCH_USAGE is writable from inside the sandbox


def test_the_presets_load_as_worker_plugins_from_their_entry_points():
    """pyproject declares each preset in `orchestrate.workers`: `orchestrate plugins` lists them, installed."""
    import json
    done = subprocess.run([sys.executable, "-m", "orchestrate", "plugins", "--json"], capture_output=True,
                          text=True, check=True)
    rows = {r["name"]: r for r in json.loads(done.stdout) if r["dist"] == "orchestrate"}
    assert {name: (r["kind"], r["state"], r["target"], r["capabilities"]) for name, r in rows.items()} == {
        name: ("worker", "ok", target, ["agent", f"agent:{name}"]) for name, target in BUILTIN.items()}


def test_an_unknown_preset_is_an_environment_error_naming_what_is_installed(tmp_path):
    done = _runner(tmp_path, "nosuch-agent", os.environ["PATH"])
    assert done.returncode == ENVIRONMENT
    assert "agent preset nosuch-agent: no worker plugin named 'nosuch-agent' is installed" in done.stderr


def test_an_unknown_agent_is_one_line_with_its_place_and_a_did_you_mean(tmp_path, orch):
    dag = tmp_path / "dag.yaml"
    dag.write_text("""\
topic: v
workers:
  impl: {agent: claud-code}
nodes:
  - {id: A, title: a, depends_on: [], file_surface: [a.txt], worker: {agent: gemeni}}
  - {id: B, title: b, depends_on: [], file_surface: [b.txt], discipline: impl}
""")
    result = orch("validate", "--dag", dag, cwd=tmp_path)
    assert result.rc == 1
    text = result.out + result.err
    presets = "agents: aider, claude-code, codex, gemini, opencode"
    assert f"dag.yaml:3: workers.impl.agent: no agent preset `claud-code` (did you mean `claude-code`?); {presets}" in text
    assert f"dag.yaml:5: nodes.A.worker.agent: no agent preset `gemeni` (did you mean `gemini`?); {presets}" in text
    assert text.count("no agent preset") == 2  # one line each, and no "no worker" on top


def test_the_plan_knows_the_same_presets_as_the_runner():
    from orchestrate.dag.model import AGENT_PRESETS
    assert set(AGENT_PRESETS) == set(BUILTIN)


def test_a_workers_discipline_may_name_an_agent(tmp_path):
    from orchestrate.dag.load import load_dag
    ok = tmp_path / "ok.yaml"
    ok.write_text("topic: v\nworkers:\n  impl: {agent: claude-code, model: sonnet, args: [--max-turns, '5']}\n"
                  "nodes:\n  - {id: A, file_surface: [a.txt], discipline: impl}\n")
    assert load_dag(ok).by_id["A"].worker == load("claude-code").command(
        "A", {"model": "sonnet", "args": ["--max-turns", "5"]})


def test_aider_keeps_its_side_files_out_of_the_worktree(tmp_path, repo):
    """A real git worktree stays clean: aider's history files land next to the brief, in the run folder."""
    bindir, run_dir = tmp_path / "bin", tmp_path / "run"
    bindir.mkdir(), run_dir.mkdir()
    # writes where the flags say, as aider does (options: History Files)
    (bindir / "aider").write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in\n'
                                  '  --chat-history-file|--input-history-file) echo x > "$2"; shift ;;\n'
                                  'esac; shift; done\n')
    (bindir / "aider").chmod(0o755)
    brief = run_dir / "brief-1.md"
    brief.write_text(BRIEF)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", ORCH_BRIEF=str(brief))
    done = subprocess.run([sys.executable, "-m", "orchestrate.workers.agents", "aider"], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "brief-1.aider.chat.history.md", "brief-1.aider.input.history", "brief-1.md"]
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini", "opencode"])  # aider reports no usage
def test_an_agent_that_crosses_its_nodes_budget_is_not_merged(tmp_path, orch, monkeypatch, name):
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir(), record.mkdir()
    _fake_agent(bindir, name, record)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    topic = "bud" + name.replace("-", "")
    dag = DAG.format(topic=topic, name=name).replace("    sandbox: none\n",
                                                     "    sandbox: none\n    budget: {tokens: 500}\n")
    repo = campaign_repo(tmp_path, dag, "#!/bin/sh\n")
    result = orch("run", cwd=repo)
    assert result.rc == 75 and "seam realignment" in result.out, result.out + result.err
    spent = USAGE[name]["input_tokens"] + USAGE[name]["output_tokens"]
    assert f"node N1 spent {spent} tokens over 1 attempt(s), reaching its budget of 500 tokens" in result.out
    assert "agent.txt" not in repo.git("ls-tree", "--name-only", f"campaign/{topic}")  # its edit was not merged
    assert "ORCH_BUDGET_TOKENS=500" in (record / "env").read_text()  # the agent was told what it may spend
