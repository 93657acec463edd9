"""Lambda retention."""
