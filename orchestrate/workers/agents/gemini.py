"""Gemini CLI (`gemini`), headless, auto-approving edit tools only.

Sources: https://geminicli.com/docs/cli/headless/ (headless mode, JSON output schema, exit codes) and
https://geminicli.com/docs/cli/cli-reference (flags: -p appended to stdin, --approval-mode, -m).
"""
from __future__ import annotations

from orchestrate.workers.agents.preset import TURN_LIMIT, Call, Preset, count, last_object

PROMPT = ("Do the work the brief above describes, editing files in the current directory. "
          "Do not push and do not open pull requests.")
TURN_LIMIT_EXIT = 53  # "Turn limit exceeded" (headless, exit codes), not a context overflow


class Gemini(Preset):
    name = "gemini"
    binary = "gemini"
    install = "npm install -g @google/gemini-cli"
    login = "gemini  (choose a login method once)"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        argv = [self.binary,
                "-p", PROMPT,  # forces headless mode; appended to stdin input (cli-reference)
                "--output-format", "json",  # {response, stats, error} (headless)
                # auto-approve edit tools; shell commands such as git push still need an approval nobody gives;
                # never yolo (cli-reference)
                "--approval-mode", "auto_edit"]
        if model:
            argv += ["-m", model]  # (cli-reference)
        return Call(argv + list(args), stdin=brief)

    def usage(self, stdout: str) -> dict | None:
        # stats.models.<model>.tokens.{prompt, candidates, total} (headless JSON output)
        stats = (last_object(stdout) or {}).get("stats")
        models = stats.get("models") if isinstance(stats, dict) else None
        if not isinstance(models, dict) or not models:
            return None
        tokens = [m.get("tokens") for m in models.values() if isinstance(m, dict) and isinstance(m.get("tokens"), dict)]
        return {"input_tokens": sum(count(t.get("prompt")) for t in tokens),
                "output_tokens": sum(count(t.get("candidates")) for t in tokens), "cost_usd": 0.0,
                "model": ",".join(sorted(models))}

    def reported_error(self, stdout: str) -> str:
        error = (last_object(stdout) or {}).get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error) if error else ""

    def failure(self, rc: int, stderr: str, reported: str) -> str | None:
        return TURN_LIMIT if rc == TURN_LIMIT_EXIT else super().failure(rc, stderr, reported)
