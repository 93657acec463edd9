"""Lambda sweeper."""
