"""Op-table tests. ``ops.cases`` is importable from every test (tests/ is on sys.path)."""
