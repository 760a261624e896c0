"""The engine: states, the transition table (data), the loop, the context every handler gets, scheduling,
guardrails and edge routing, starting and resuming a campaign, and one handler per state in handlers/.
The CLI and replay import it; below them only workers/launch.py does, for the list of plugin gates
(`engine.plugin_gates`) an attempt's brief names.

May use: everything below the CLI (doors, dag, recorder, workers, seams, report, the gates).
"""
