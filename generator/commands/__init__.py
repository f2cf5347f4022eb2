"""One module per CLI command; each body: options → one pipeline call → report → exit."""
