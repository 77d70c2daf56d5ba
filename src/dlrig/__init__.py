"""dlrig: the deep-learning hardware guide as software.

The library is pure: catalog, build, workloads, rules, model and plan compute typed values from
typed inputs. Hardware access lives in `dlrig.hardware`; printing lives in `dlrig.cli` and
`dlrig.report`.
"""

__version__ = "0.1.0"
