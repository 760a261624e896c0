"""The plan: the DAG file loaded with line numbers, its model and validation, typed edges, the condition
language, the graph and its layers, and surface semantics. Imports only the kernel doors (errors, proc,
git, config); the gates and every other room may import it."""
