"""Agents, their tools and the registry that finds them again when a turn is restored."""
