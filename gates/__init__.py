"""Standalone checks with exit-code contracts; `gates.core` holds what they share with the engine.

`gates` never imports `orchestrate`: the DAG contract, surface semantics, the process runner and the
git verbs live in `gates.core` so the gates and the engine judge with the same code.
"""
