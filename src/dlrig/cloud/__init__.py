"""Buy or rent: a dated snapshot of cloud GPU prices (`data/prices.toml`), a user's own price
list (`--prices`), what a job costs on each offer that holds it, and when owning a build pays
off against renting (`ownership.py`). Nothing here calls the network."""
