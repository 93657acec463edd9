"""Helpers shared by the test suites (emulators, fake AWS settings). Not part of the package."""
