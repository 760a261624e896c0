The demo campaign, step by step. `orchestrate replay demo/TRANSCRIPT.t` (or `prysk`, or `cram`, with
`orchestrate` on the PATH) runs every command below in a scratch directory and checks its output and
exit code (cram format: `[N]` is a non-zero exit code, `(re)` and `(glob)` mark lines that vary from
run to run).

Everything the campaign needs from its surroundings is set up here: a home of its own with a git
identity and `main` as the default branch, no system git configuration, and plain uncoloured output:

  $ export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1 TERM=dumb CI=true
  $ unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_CONFIG_GLOBAL XDG_CONFIG_HOME ORCH_TOPIC ORCH_NODE
  $ unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
  $ mkdir -p "$HOME"
  $ git config --global user.name "Replay Person"
  $ git config --global user.email replay@example.com
  $ git config --global init.defaultBranch main

A fresh project with the demo's scripted workers, and its recorder:

  $ git init -q repo && cd repo
  $ mkdir -p demo && cp -R "$TESTDIR/workers" demo/workers
  $ printf '# demo project\n\nA tiny repository for the orchestrate demo campaign.\n' > README.md
  $ git add -A && git commit -qm "baseline: the demo project"
  $ orchestrate init
  created the recorder */repo/.ledger (glob)
  wrote a starter plan */repo/.ledger/state/dag.yaml (two nodes; edit it, then `orchestrate validate`) (glob)
  added .ledger/, .scratch/ to .git/info/exclude
  $ cp "$TESTDIR/dag.yaml" .ledger/state/dag.yaml

DERIVE: the plan is valid, and D4 (serialized on D2's file) runs after the parallel set:

  $ orchestrate validate
  valid: */repo/.ledger/state/dag.yaml (4 nodes, 2 layers, topic demo) (glob)
  $ orchestrate layers --json
  {"layer_count": 2, "layers": [["D1"], ["D2", "D3", "D4"]]}
  $ orchestrate layers
  layer 0: D1
  layer 1: D2 D3  | serial: D4
  2 layer(s), 4 node(s) to run

The campaign runs until D4's premise goes stale (D2 asked for demo/c.txt, which D4 assumed absent):

  $ orchestrate run --quiet
  paused at seam realignment for node D4 \(bound to [0-9a-f]{12}\) (re)
    INVALIDATED: node D4 has 1 stale premise(s); realign before dispatch
  answer it with one of:
    orchestrate decide realignment rework --topic demo --note "..."
    orchestrate decide realignment skip --topic demo --note "..."
    orchestrate decide realignment halt --topic demo --note "..."
  then: orchestrate resume --topic demo
  [75]
  $ orchestrate status
  campaign demo: PAUSE, layer 1 \(layers 0-1\), tip [0-9a-f]{12} on campaign/demo \(interactive\) (re)
    L0 D1           ACCEPTED    attempt 1
    L1 D2           ACCEPTED    attempt 1
    L1 D3           ACCEPTED    attempt 2
    L1 D4           INVALIDATED attempt 0  <- seam realignment: INVALIDATED: node D4 has 1 stale premise(s); realign before dispatch
  open seam realignment: INVALIDATED: node D4 has 1 stale premise(s); realign before dispatch (node D4; choices: rework, skip, halt)

A person decides that D4 goes ahead; resume applies it, and the campaign closes:

  $ orchestrate decide realignment rework --note "c.txt exists by design now"
  recorded: realignment rework by replay@example\.com, bound to [0-9a-f]{12} (re)
  `orchestrate resume --topic demo` applies it
  $ orchestrate resume --quiet
  paused at seam final\-acceptance \(bound to [0-9a-f]{12}\) (re)
    campaign/demo is complete at [0-9a-f]{12} (re)
    review: git log \-\-first\-parent [0-9a-f]{12}\.\.campaign/demo (re)
    retrospective: */repo/.ledger/log/????-??-??-demo.md (glob)
  answer it with one of:
    orchestrate decide final-acceptance accept --topic demo --note "..."
    orchestrate decide final-acceptance reject --topic demo --note "..."
  [75]

The gates, run by hand on what the campaign left (the engine ran the same checks in-process):

  $ orchestrate gate reconcile-node --dag .ledger/state/demo/dag.yaml --node D1 --base main --head node/demo/D1
  OK         A demo/base.txt  <- declared surface of D1 (demo/base.txt)
  PASS: every touched path of node D1 falls under its declared surface
  $ orchestrate gate collision-check --path demo/a.txt --against-surfaces demo/a.txt
  COLLIDE    demo/a.txt  <- surface 1 surface demo/a.txt
  SERIALIZE: 1 collision(s) with concurrent surfaces
  [3]
  $ orchestrate gate collision-check --path demo/c.txt --against-surfaces demo/a.txt
  WIDEN      demo/c.txt
  WIDEN: requested paths are disjoint from every concurrent surface
  $ orchestrate gate premise --dag "$TESTDIR/dag.yaml" --node D4
  FRESH      (0==0)  test ! -e demo/c.txt
  FRESH: node D4: every premise still holds
  $ orchestrate gate premise --dag .ledger/state/demo/dag.yaml --node D4
  STALE      (got 0, want 1)  test ! -e demo/c.txt  <- D4 was planned before anyone wrote demo/c.txt
  INVALIDATED: node D4 has 1 stale premise(s); realign before dispatch
  [1]
  $ orchestrate gate coherence --base main --head campaign/demo
  PASS       references: no surviving reference to 0 removed name(s)
  PASS       links: 0 link(s) in 0 changed markdown file(s) resolve
  COHERENT: every check passed
  $ orchestrate gate coherence --base main --head campaign/demo --name campaign
  ORPHAN     README.md:3: A tiny repository for the orchestrate demo campaign.  <- refers to removed campaign
  ORPHAN     demo/base.txt:1: base of campaign demo  <- refers to removed campaign
  ORPHAN     demo/workers/scripted.sh:8: D1) mkdir -p demo && echo "base of campaign $ORCH_TOPIC" > demo/base.txt ;;  <- refers to removed campaign
  FAIL       references  <- 3 surviving reference(s)
  PASS       links: 0 link(s) in 0 changed markdown file(s) resolve
  INCOHERENT: 1 check(s) failed
  [1]
  $ orchestrate gate adherence --topic demo --base main
  OK         [0-9a-f]{12}  merge node D1: base file (re)
  OK         [0-9a-f]{12}  merge node D2: file a (re)
  OK         [0-9a-f]{12}  merge node D3: file b (re)
  OK         [0-9a-f]{12}  merge node D4: extend file a (re)
  PASS: 4 merge(s), all of this campaign's nodes
  $ orchestrate gate close-check --topic demo
  PASS       open  <- [0-9a-f]{12} log: open demo \(4 nodes, 2 layers\) (re)
  PASS       close  <- [0-9a-f]{12} log: close demo retrospective (re)
  PASS       sufficiency  <- log/\d{4}-\d\d-\d\d-demo\.md: 5 line\(s\) of prose (re)
  PASS: demo closed on main at [0-9a-f]{12} with a Sufficiency Review \(5 line\(s\) of prose\) (re)

The first-parent history of the campaign branch: one --no-ff merge per node.

  $ git log --first-parent --format=%s main..campaign/demo
  merge node D4: extend file a
  merge node D3: file b
  merge node D2: file a
  merge node D1: base file

Final acceptance completes the campaign; merging it and pushing stay the human's:

  $ orchestrate decide final-acceptance accept --note "read the diff" --quiet
  recorded: final\-acceptance accept by replay@example\.com, bound to [0-9a-f]{12} (re)
  campaign demo is done: campaign/demo at [0-9a-f]{12} (re)
  campaign demo accepted at [0-9a-f]{12}; merging campaign/demo into your branch, and pushing, stay yours to do (re)
  $ orchestrate status --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['state'], d['accepted'])"
  DONE True
