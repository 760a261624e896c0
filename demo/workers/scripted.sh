#!/bin/sh
# The demo's scripted worker: does what an agent would for each node, including freezing when it
# needs a path outside its surface. It reads its surface from ORCH_SURFACE, like a careful agent.
set -eu
has() { printf '%s\n' "$ORCH_SURFACE" | grep -qx "$1"; }
freeze() { printf '{"freeze": "surface-exceed", "paths": ["%s"]}\n' "$1" > "$ORCH_RETURN"; exit 0; }
case "$ORCH_NODE" in
  D1) mkdir -p demo && echo "base of campaign $ORCH_TOPIC" > demo/base.txt ;;
  D2) has demo/c.txt || freeze demo/c.txt
      echo "a: written by D2" > demo/a.txt
      echo "c: a note D2 needed" > demo/c.txt ;;
  D3) has demo/a.txt || freeze demo/a.txt
      echo "b: written by D3" > demo/b.txt
      echo "a: see b.txt (D3)" >> demo/a.txt ;;
  D4) echo "a: closed by D4" >> demo/a.txt ;;
  R1) git rm -q docs/old*.md ;;
  R2) printf '# Guide\n\nSee [the old notes](old.md).\n' > docs/guide.md ;;
  R3) sed 's/\[the old notes\](old\.md)/the old notes (removed by R1)/' docs/guide.md > guide.tmp
      mv guide.tmp docs/guide.md ;;  # the red demo's recovery (README: The demo)
  *) echo "scripted.sh: no script for node $ORCH_NODE" >&2; exit 2 ;;
esac
git add -A && git commit -q -m "node $ORCH_NODE: attempt $ORCH_ATTEMPT"
