"""Benchmark support: synthetic catalogs of any size (SYNTHETIC DATA)."""
