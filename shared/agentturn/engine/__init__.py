"""The engine: the runner, its loop and steps, suspending and resuming, leases, locks and events."""
