"""The plan: the DAG file loaded with line numbers, its model and validation, typed edges, the condition
language, the graph and its layers, and surface semantics. The gates and every other room may import it.

May use: the doors only.
"""
