"""aider, scripted with a message file.

Sources: https://aider.chat/docs/scripting.html (--message-file, --yes) and
https://aider.chat/docs/config/options.html (--model). aider documents no structured output, so this
preset reports no usage rather than scraping its human-readable token line.
"""
from __future__ import annotations

from orchestrate.workers.agents.preset import Call, Preset


class Aider(Preset):
    name = "aider"
    binary = "aider"
    install = "python -m pip install aider-install && aider-install"
    login = "set your model provider's API key (for example ANTHROPIC_API_KEY) in the environment"

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        argv = [self.binary,
                "--message-file", brief_path,  # process the brief's message, then exit (scripting)
                # answer aider's own confirmations (add/create files): stdin is closed, nobody could (scripting)
                "--yes"]
        if model:
            argv += ["--model", model]  # (config/options)
        return Call(argv + list(args))
