from scaffold_guard.app.cli import main

raise SystemExit(main())
