"""Coding agents as worker plugins: one preset per agent, each building that agent's documented
non-interactive command line, handing it the brief, and turning its structured output into `$ORCH_USAGE`.

A node says `worker: {agent: NAME, model: ..., args: [...]}`; validation turns that into the command
`python -m orchestrate.workers.agents NAME ...`, which runs `run.main` in the node's worktree. A preset is
also an ordinary worker plugin (`protocol_version`, `capabilities`, `command()`), so `orchestrate plugins`
lists it and a third party ships its own the same way (an entry point in `orchestrate.workers` whose
object subclasses `preset.Preset`).

May use: the doors and dag, as the rest of workers/.
"""
from __future__ import annotations

# name -> "module:Class"; imported only when a run needs one, so the CLI stays fast
BUILTIN = {
    "claude-code": "orchestrate.workers.agents.claude_code:ClaudeCode",
    "codex": "orchestrate.workers.agents.codex:Codex",
    "aider": "orchestrate.workers.agents.aider:Aider",
    "gemini": "orchestrate.workers.agents.gemini:Gemini",
    "opencode": "orchestrate.workers.agents.opencode:OpenCode",
}
