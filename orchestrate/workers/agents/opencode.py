"""OpenCode (`opencode run`), with the brief attached as a file.

Source: https://opencode.ai/docs/cli/commands (run: --format json, --model provider/model, --file, which
attaches one or more files: `-f, --file FILE` is an array option, so the message goes before it lest it be
read as one more file). Which tools run without asking is OpenCode's own `permission` configuration; this
preset adds no flag that widens it. OpenCode's own documentation gives no schema for the JSON events; the
events read for usage (`step_finish` with `part.tokens` and `part.cost`) are those its source emits
(packages/opencode/src/cli/cmd/run.ts, as described at
https://docs.rs/ralph-workflow/latest/ralph_workflow/json_parser/opencode/). The npm package `opencode-ai`
is the one install guides name (https://docs.aihubmix.com/en/api/Opencode); OpenCode's own install page
could not be read to confirm it.
"""
from __future__ import annotations

from orchestrate.workers.agents.preset import Call, Preset, count, json_lines

PROMPT = ("Do the work the attached brief describes, editing files in the current directory. "
          "Do not push and do not open pull requests.")


class OpenCode(Preset):
    name = "opencode"
    binary = "opencode"
    install = "npm install -g opencode-ai"
    login = "opencode auth login"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        argv = [self.binary, "run", PROMPT,  # a message without the interactive interface (commands)
                "--format", "json"]  # newline-delimited JSON events (commands)
        if model:
            argv += ["--model", model]  # provider/model (commands)
        # the brief last: --file takes every value after it (commands), so the user's args come before it
        return Call(argv + list(args) + ["--file", brief_path])

    def usage(self, stdout: str) -> dict | None:
        steps = [e["part"] for e in json_lines(stdout)
                 if e.get("type") == "step_finish" and isinstance(e.get("part"), dict)]
        if not steps:
            return None
        tokens = [s.get("tokens") if isinstance(s.get("tokens"), dict) else {} for s in steps]
        cost = sum(float(s["cost"]) for s in steps if isinstance(s.get("cost"), (int, float))
                   and not isinstance(s.get("cost"), bool))
        return {"input_tokens": sum(count(t.get("input")) for t in tokens),
                "output_tokens": sum(count(t.get("output")) for t in tokens), "cost_usd": cost, "model": ""}
