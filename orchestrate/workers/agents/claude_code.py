"""Claude Code (`claude`), run headless with its own accept-edits permission mode.

Sources: https://docs.anthropic.com/en/docs/claude-code/cli-reference (flags),
https://docs.anthropic.com/en/docs/claude-code/sdk/sdk-headless (print mode, JSON output) and
https://code.claude.com/docs/en/agent-sdk/cost-tracking (the result's `usage` with its cache token counts,
`total_cost_usd`, and the per-model `modelUsage` keyed by model name).
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
        # {"type": "result", "is_error", "result", "total_cost_usd", "usage": {...}, "modelUsage": {MODEL: ...}}
        # (sdk-headless, cost-tracking)
        result = last_object(stdout)
        if not result or result.get("type") != "result":
            return None
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        cost = result.get("total_cost_usd")
        # input_tokens counts only what missed the prompt cache: reads and writes of the cache are input too
        read = sum(count(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens",
                                                  "cache_creation_input_tokens"))
        models = result.get("modelUsage") if isinstance(result.get("modelUsage"), dict) else {}
        return {"input_tokens": read, "output_tokens": count(usage.get("output_tokens")),
                "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
                "model": ",".join(sorted(str(m) for m in models))}

    def reported_error(self, stdout: str) -> str:
        result = last_object(stdout)
        if result and result.get("is_error") is True:
            return str(result.get("result") or result.get("subtype") or "the agent reported an error")
        return ""
