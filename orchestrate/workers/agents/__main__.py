"""`python -m orchestrate.workers.agents NAME [--model M] [--timeout S] [-- ARGS...]`: one agent attempt."""
from __future__ import annotations

import sys

from orchestrate.workers.agents.run import main

sys.exit(main(sys.argv[1:]))
