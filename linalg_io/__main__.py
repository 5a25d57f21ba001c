from linalg_io.cli import main

raise SystemExit(main())
