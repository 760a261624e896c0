"""The gates: standalone checks with exit-code contracts, one module per gate (`python -m gates.NAME`).

A gate imports only the kernel of `orchestrate` (the plan in `orchestrate.dag`, the doors `git`, `proc`,
`errors`, `config`) and `gates.shared`, never the engine: the engine and a person at a shell judge with
the same code.
"""
