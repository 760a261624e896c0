"""aider, scripted with a message file.

Sources: https://aider.chat/docs/scripting.html (--message-file, --yes) and
https://aider.chat/docs/config/options.html (--model; "History Files": --input-history-file,
--chat-history-file; "Git Settings": --gitignore/--no-gitignore). aider documents no structured output, so
this preset reports no usage rather than scraping its human-readable token line.
"""
from __future__ import annotations

from pathlib import Path

from orchestrate.workers.agents.preset import Call, Preset


class Aider(Preset):
    name = "aider"
    binary = "aider"
    install = "python -m pip install aider-install && aider-install"
    login = "set your model provider's API key (for example ANTHROPIC_API_KEY) in the environment"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        # aider's side files go next to the brief in the attempt's run folder, never into the worktree, where
        # they would be committed as the node's work and fail its surface
        side = Path(brief_path).with_suffix("")
        argv = [self.binary,
                "--message-file", brief_path,  # process the brief's message, then exit (scripting)
                # answer aider's own confirmations (add/create files): stdin is closed, nobody could (scripting)
                "--yes",
                "--no-gitignore",  # do not add .aider* to the worktree's .gitignore (options: Git Settings)
                "--chat-history-file", f"{side}.aider.chat.history.md",  # (options: History Files)
                "--input-history-file", f"{side}.aider.input.history"]  # (options: History Files)
        if model:
            argv += ["--model", model]  # (config/options)
        return Call(argv + list(args))
