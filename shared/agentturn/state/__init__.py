"""The durable state: the turn, its messages and cards, and the commands that answer it."""
