from atlas_cli.cli import main

raise SystemExit(main())
