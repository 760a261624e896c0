from orchestrate.cli import main

raise SystemExit(main())
