"""Lambda submit."""
