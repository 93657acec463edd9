"""Lambda worker."""
