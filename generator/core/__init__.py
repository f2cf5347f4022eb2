"""Foundations every stage uses: errors, typed records, safe reading and writing, YAML, canonical forms, the build cache."""
