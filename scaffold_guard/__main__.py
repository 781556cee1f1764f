from scaffold_guard.cli import main

raise SystemExit(main())
