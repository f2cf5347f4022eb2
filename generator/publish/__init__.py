"""What leaves the repository: diffs between revisions, the compatibility gate, releases and their verification."""
