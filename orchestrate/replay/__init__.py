"""Replay: cram-style transcripts, a recorded campaign re-driven with stand-in workers, and the demo."""
