"""orchestrate: a git-backed campaign orchestrator."""

__version__ = "0.1.0"
