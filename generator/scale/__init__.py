"""The scale contract: snapshots, preflight checks, qualification runs along the node-count ladder, sample runs."""
