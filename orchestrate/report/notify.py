"""Telling someone who is not watching: the `notify:` commands of `.ledger/config.yaml`.

Each runs on the events it asks for (seam, halt, done; verdict on request) with what happened in its
environment. A notifier runs in the background with a timeout, so it never holds the campaign up; one
that fails or hangs becomes a warning and a line in the run's notify.log, never a failed campaign.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from orchestrate import config, proc, reaping
from orchestrate.errors import ProcError
from orchestrate.printable import one_line


def decide_commands(topic: str, seam: dict) -> list[str]:
    """The exact commands that answer `seam`, one per choice."""
    name = seam.get("seam")
    # `budget raise` is refused without the new limit, so its command says where the limit goes
    extra = {("budget", "raise"): " --limit-usd X"}
    return [f"orchestrate decide {name} {choice}{extra.get((name, choice), '')} --topic {topic} --note \"...\""
            for choice in seam.get("choices", [])]


class Notifier:
    def __init__(self, commands: list[config.NotifyCommand], *, cwd: Path, log_dir: Callable[[str], Path]) -> None:
        self.commands = commands
        self.cwd, self.log_dir = cwd, log_dir
        self._threads: list[threading.Thread] = []
        self._failed: list[str] = []
        self._lock = threading.Lock()
        self._seams: set[str] = set()  # a seam asked on the terminal and then paused is one notification

    @classmethod
    def from_config(cls, layout) -> "Notifier | None":
        commands = config.notify(layout.ledger)
        return cls(commands, cwd=layout.root, log_dir=layout.runs) if commands else None

    def send(self, event: str, topic: str, *, node: str = "", seam: dict | None = None, verdict: str = "",
             message: str = "") -> None:
        if seam is not None:
            if seam.get("id") in self._seams:
                return
            self._seams.add(seam.get("id"))
            node = node or seam.get("node") or ""
        env = {"ORCH_EVENT": event, "ORCH_TOPIC": topic, "ORCH_NODE": node,
               "ORCH_SEAM": (seam or {}).get("seam", ""), "ORCH_VERDICT": verdict,
               "ORCH_DECIDE": "\n".join(decide_commands(topic, seam)) if seam else "",
               "ORCH_MESSAGE": one_line(message or _message(event, topic, node, seam, verdict)),
               "ORCH_NOTIFIER": reaping.NOTIFIER,  # what it sends in the background is not ended with the run,
               "ORCH_ORIGIN": ""}  # nor by a resume after the run died, which ends what carries the run's origin
        for command in self.commands:
            if event in command.events:
                thread = threading.Thread(target=self._run, args=(command, env), daemon=True,
                                          name=f"notify {event}")
                thread.start()
                self._threads.append(thread)

    def _run(self, command: config.NotifyCommand, env: dict[str, str]) -> None:
        try:
            done = proc.run_shell(command.run, cwd=self.cwd, env=env, timeout=command.timeout)
        except ProcError as exc:  # the shell itself could not start
            self._record(command, env, f"notify command `{command.run}` could not start: {exc}", str(exc))
            return
        output = (done.stdout + done.stderr).strip()
        if done.timed_out:
            why = f"notify command `{command.run}` was stopped after {command.timeout:g}s"
        elif done.rc != 0:
            last = output.splitlines()[-1] if output else ""
            why = f"notify command `{command.run}` exited {done.rc}" + (f": {last}" if last else "")
        else:
            why = ""
        self._record(command, env, why, output)

    def _record(self, command: config.NotifyCommand, env: dict[str, str], why: str, output: str) -> None:
        log = self.log_dir(env["ORCH_TOPIC"]) / "notify.log"
        with self._lock:
            try:
                log.parent.mkdir(parents=True, exist_ok=True)
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(f"{env['ORCH_EVENT']} {env['ORCH_NODE'] or '-'}: {command.run}: {why or 'ok'}\n"
                             + "".join(f"  {ln}\n" for ln in output.splitlines()))
            except OSError:
                pass  # the warning below still says what failed
            if why:
                self._failed.append(f"{why} (on {env['ORCH_EVENT']}; the campaign goes on; log: {log})")

    def failures(self) -> list[str]:
        """The failures since the last call (the runner prints them from its own thread)."""
        with self._lock:
            found, self._failed = self._failed, []
        return found

    def wait(self) -> None:
        """Each notifier ends within its timeout (proc.run kills the process group then)."""
        for thread in self._threads:
            thread.join()
        self._threads = []


def _message(event: str, topic: str, node: str, seam: dict | None, verdict: str) -> str:
    if event == "seam" and seam:
        return f"{topic}: waiting for you at seam {seam.get('seam')}" + (f" ({node})" if node else "") + (
            f": {seam['reason']}" if seam.get("reason") else "")
    if event == "verdict":
        return f"{topic}: {node} {verdict}"
    if event == "done":
        return f"{topic}: campaign done"
    return f"{topic}: {event}"
