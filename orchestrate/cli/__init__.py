"""The command line: the console script's fast path, the click commands split by what they act on, and
the one error boundary that turns an OrchestrateError into one line and its exit code.

May use: everything; nothing but `orchestrate/__main__.py` imports it.
"""
