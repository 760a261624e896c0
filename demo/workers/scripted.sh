#!/bin/sh
# A scripted worker for the demo: writes the node's file and commits it, like an agent would.
set -eu
case "$ORCH_NODE" in
  D1) mkdir -p demo && echo "base of campaign $ORCH_TOPIC" > demo/base.txt ;;
  D2) echo "a: written by D2" > demo/a.txt ;;
  D3) echo "b: written by D3" > demo/b.txt ;;
  D4) echo "a: extended by D4" >> demo/a.txt ;;
  *) echo "scripted.sh: no script for node $ORCH_NODE" >&2; exit 2 ;;
esac
git add -A && git commit -q -m "node $ORCH_NODE: attempt $ORCH_ATTEMPT"
