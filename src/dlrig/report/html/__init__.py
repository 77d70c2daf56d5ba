"""Self-contained HTML pages of dlrig's results (`--html FILE`)."""
