"""The recorder: the nested git repository .ledger/ (its paths, the journal and its compare-and-swap
commits, checkpoints, locks, the sketch), folding a journal into a campaign's state, provenance and the
doctor. It imports only the kernel: resume, which also reconciles with git and continues, is the
engine's."""
