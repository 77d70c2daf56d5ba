"""The history database: probes (probes.py) and watched runs (runs.py) in one SQLite file."""
