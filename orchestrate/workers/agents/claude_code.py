"""Claude Code (`claude`), run headless with its own accept-edits permission mode.

Sources: https://docs.anthropic.com/en/docs/claude-code/cli-reference (flags) and
https://docs.anthropic.com/en/docs/claude-code/sdk/sdk-headless (print mode, JSON output).
"""
from __future__ import annotations

from orchestrate.workers.agents.preset import Call, Preset, count, last_object

PROMPT = ("Do the work the brief on stdin describes, editing files in the current directory. "
          "Do not push and do not open pull requests.")
# The agent must never publish: pushing and every GitHub CLI call are refused by the agent's own guard.
NO_PUBLISH = "Bash(git push:*),Bash(gh:*)"


class ClaudeCode(Preset):
    name = "claude-code"
    binary = "claude"
    install = "npm install -g @anthropic-ai/claude-code"
    login = "claude  (then /login)"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        argv = [self.binary,
                "-p", PROMPT,  # --print: non-interactive, piped stdin is read as context (cli-reference)
                "--output-format", "json",  # one JSON result with usage and total_cost_usd (sdk-headless)
                "--permission-mode", "acceptEdits",  # edits without prompts; never bypassPermissions (sdk-headless)
                "--disallowedTools", NO_PUBLISH]  # comma-separated rule string form (cli-reference)
        if model:
            argv += ["--model", model]  # alias or full model name (cli-reference)
        return Call(argv + list(args), stdin=brief)

    def usage(self, stdout: str) -> dict | None:
        # result object: {"type": "result", "is_error", "result", "total_cost_usd", "usage": {...}} (sdk-headless)
        result = last_object(stdout)
        if not result or result.get("type") != "result":
            return None
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        cost = result.get("total_cost_usd")
        return {"input_tokens": count(usage.get("input_tokens")), "output_tokens": count(usage.get("output_tokens")),
                "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
                "model": str(result.get("model") or "")}

    def reported_error(self, stdout: str) -> str:
        result = last_object(stdout)
        if result and result.get("is_error") is True:
            return str(result.get("result") or result.get("subtype") or "the agent reported an error")
        return ""
