"""Stage `site`: generate pages, JSON, charts and badges, and build the static site."""
