"""The conversation timeline: a projection of snapshots, its identities, repair and the list."""
