"""The command line: the console script's fast path and the click commands with the one error boundary."""
