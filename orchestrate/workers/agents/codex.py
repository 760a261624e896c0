"""OpenAI Codex CLI (`codex exec`), in its own workspace-write sandbox.

Source: https://developers.openai.com/codex/noninteractive (exec, sandbox modes, stdin) and
https://developers.openai.com/codex/cli/reference#codex-exec (flags); the `--json` event shapes
(`turn.completed` with `usage`) are those of codex-rs/exec/src/exec_events.rs (openai/codex PR 4309).
"""
from __future__ import annotations

from orchestrate.workers.agents.preset import Call, Preset, count, json_lines

PROMPT = ("Do the work the brief on stdin describes, editing files in the current directory. "
          "Do not push and do not open pull requests.")


class Codex(Preset):
    name = "codex"
    binary = "codex"
    install = "npm install -g @openai/codex"
    login = "codex login"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        argv = [self.binary, "exec",  # non-interactive mode (noninteractive)
                # edits inside the workspace; its network stays off, so nothing can be pushed (noninteractive);
                # never danger-full-access
                "--sandbox", "workspace-write",
                "--json"]  # JSONL events on stdout (cli/reference)
        if model:
            argv += ["--model", model]  # (cli/reference)
        # the prompt argument is the instruction, piped stdin the added context (noninteractive)
        return Call(argv + list(args) + [PROMPT], stdin=brief)

    def usage(self, stdout: str) -> dict | None:
        turns = [e["usage"] for e in json_lines(stdout)
                 if e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict)]
        if not turns:
            return None
        return {"input_tokens": sum(count(u.get("input_tokens")) for u in turns),
                "output_tokens": sum(count(u.get("output_tokens")) for u in turns), "cost_usd": 0.0, "model": ""}

    def reported_error(self, stdout: str) -> str:
        for event in json_lines(stdout):
            if event.get("type") == "turn.failed":
                error = event.get("error")
                return str(error.get("message") if isinstance(error, dict) else error or "turn failed")
        return ""
