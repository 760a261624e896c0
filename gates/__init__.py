"""The gates: standalone checks with exit-code contracts, one module per gate (`python -m gates.NAME`).

The engine and a person at a shell judge with the same code, so a gate never reaches into the engine.
May use: the kernel of `orchestrate` (the doors `errors`, `proc`, `git`, `config`, `atomic`, `faults`,
`resources`, `inert`, and the plan in `orchestrate.dag`) and `gates.shared`.
"""
