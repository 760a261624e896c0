"""The recorder: the nested git repository .ledger/ (its paths, the journal and its compare-and-swap
commits, checkpoints, locks, the sketch), folding a journal into a campaign's state, provenance and the
doctor. Resume, which also reconciles with git and continues, is the engine's.

May use: the kernel only (the doors and dag).
"""
