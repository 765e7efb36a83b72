"""One process running checks: the session, growing a check until it decides, pre-flight, placement."""
