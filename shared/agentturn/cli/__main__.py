from agentturn.cli import main

raise SystemExit(main())
