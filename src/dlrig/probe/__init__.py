"""`dlrig probe`: measure this machine and judge it against its datasheets.

Measuring lives in `measure_*.py` and `run.py` (and dlrig.hardware); everything else here is
pure: verdicts, the build document, comparisons, and the typed `report.ProbeReport` the history
stores. `dlrig.history.probes.latest_build_document` resolves `probe:latest` for check, estimate
and upgrade.
"""
