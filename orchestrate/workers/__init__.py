"""Workers: executors (local, Dask, the remote task body), starting an attempt, briefs, what a return
means, worktrees, handwork by a person, and discovery of a worker by capability."""
