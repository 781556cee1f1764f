from mock_llm.cli import main

raise SystemExit(main())
