"""Workers: executors (local, Dask, the remote task body), the sandbox and containment, starting an
attempt, briefs, what a return means, worktrees, handwork by a person, discovery of a worker by
capability, and the coding-agent presets in agents/.

May use: the doors, dag, recorder, seams, and of the engine only `engine.plugin_gates` (for the brief).
"""
