"""Replay: cram-style transcripts (with prysk's semantics), a recorded campaign re-driven with stand-in
workers, and the demo.

May use: everything below the CLI (it drives the engine as the CLI does).
"""
