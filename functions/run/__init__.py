"""Lambda run."""
