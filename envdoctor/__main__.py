from envdoctor.cli import main

raise SystemExit(main())
