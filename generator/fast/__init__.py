"""Speed-ups (see the list below)."""
