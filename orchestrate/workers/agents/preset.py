"""What every agent preset shares: the worker-plugin face, the agent's failure modes, usage numbers.

A subclass says how its agent is installed and logged into, builds the agent's argv and stdin from the
brief, and reads usage from the agent's own structured output. The failure patterns below are matched
against what the agent says about itself (never its credential files): its stderr and the error field of its
structured output, not the transcript of the task, which may well discuss HTTP 401s or rate limits.
"""
from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass

PROTOCOL_VERSION = 1
MODULE = "orchestrate.workers.agents"

AUTH, RATE_LIMIT, CONTEXT, TURN_LIMIT = "auth", "rate-limit", "context", "turn-limit"
_PATTERNS = (
    (AUTH, r"not logged in|please (run|use) \S*\s*/?login|invalid api key|missing api key|api key (is )?"
           r"(not set|required)|unauthori[sz]ed|authentication (failed|required|error)|\b401\b"),
    (RATE_LIMIT, r"rate.?limit|too many requests|\b429\b|quota exceeded|resource.?exhausted|usage limit"),
    (CONTEXT, r"context (window|length)|prompt is too long|maximum context|too many tokens|"
              r"exceeds? the (model'?s? )?(context|token) limit"),
)


@dataclass(frozen=True)
class Call:
    """One agent invocation: what runs, and what it reads on stdin (None: nothing)."""
    argv: list[str]
    stdin: str | None = None


def command_line(name: str, model: str | None = None, args: list[str] | tuple[str, ...] = ()) -> str:
    """The shell command a node with `worker: {agent: name, ...}` runs (dag/node_rules builds the same)."""
    parts = [sys.executable, "-m", MODULE, name]
    if model:
        parts += ["--model", model]
    if args:
        parts += ["--", *args]
    return shlex.join(parts)


class Preset:
    """Base of every agent preset; also an `orchestrate.workers` plugin (plugins.py's protocol)."""

    protocol_version = PROTOCOL_VERSION
    version = "1"
    name = ""  # the preset's name in a DAG: `agent: NAME`
    binary = ""  # the executable looked up on PATH
    install = ""  # what to run to install the agent
    login = ""  # what to run once to log in

    @property
    def capabilities(self) -> list[str]:
        return ["agent", f"agent:{self.name}"]

    def command(self, node_id: str, config: dict) -> str:
        return command_line(self.name, config.get("model"), config.get("args") or ())

    def call(self, brief: str, brief_path: str, model: str | None, args: list[str]) -> Call:
        raise NotImplementedError(f"{type(self).__name__} must build its agent's command line")

    def usage(self, stdout: str) -> dict | None:
        """{"input_tokens", "output_tokens", "cost_usd", "model"} from the agent's output, or None."""
        return None

    def reported_error(self, stdout: str) -> str:
        """An error the agent reported in its structured output while exiting 0, or ""."""
        return ""

    def failure(self, rc: int, stderr: str, reported: str) -> str | None:
        """AUTH, RATE_LIMIT or CONTEXT when the agent's own words say so, None otherwise: only its stderr and
        the error its structured output reported are read (`reported_error`), never the task's transcript."""
        if rc == 0:
            return None
        low = f"{stderr}\n{reported}".lower()
        return next((kind for kind, pattern in _PATTERNS if re.search(pattern, low)), None)

    def explain(self, kind: str) -> str:
        """The one line a person reads for a failure mode: what happened and what to do."""
        if kind == AUTH:
            return (f"agent preset {self.name}: `{self.binary}` reports it is not logged in; log in with "
                    f"`{self.login}` (as the user orchestrate runs as), then `orchestrate resume`")
        if kind == RATE_LIMIT:
            return (f"agent preset {self.name}: the agent hit its provider's rate limit; wait, then "
                    "`orchestrate resume` (or run fewer nodes at once with --jobs)")
        if kind == TURN_LIMIT:
            return (f"agent preset {self.name}: the agent used up its turn limit before finishing; raise the "
                    "agent's turn limit (in its `args:` or its settings) or split the node")
        return (f"agent preset {self.name}: the brief and the files it needs overflowed the model's context; "
                "narrow the node's file_surface or split the node")

    def missing(self) -> str:
        return (f"agent preset {self.name}: `{self.binary}` is not on PATH; install it with `{self.install}` "
                f"and log in with `{self.login}`")


def json_lines(text: str) -> list[dict]:
    """Every line of `text` that is a JSON object (JSONL streams interleave other text on some agents)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def last_object(text: str) -> dict | None:
    """The JSON object an agent printed as its whole output (or the last one, when it printed several)."""
    try:
        value = json.loads(text)
    except ValueError:
        objects = json_lines(text)
        return objects[-1] if objects else None
    return value if isinstance(value, dict) else None


def count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
