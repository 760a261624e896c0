from orchestrate.cli.main import main

raise SystemExit(main())
