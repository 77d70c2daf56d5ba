"""What the serving CLI tests share: one H100 SXM5 in an HGX chassis (the catalog's 80 GiB card:
units.py, its label is GiB), the `h100` fixture's build file (conftest.py), and `dlrig` run as
a user runs it, one line a line (nothing wrapped)."""

from __future__ import annotations

import os
import subprocess
import sys

ONE_H100 = """\
name: 1x H100 SXM5
platform: Supermicro SYS-821GE-TNHR
gpus:
  - model: H100 SXM5 80GB
    count: 1
cpu:
  model: Intel Xeon Platinum 8480+
  count: 2
memory:
  model: 12x Samsung 64GB DDR5-4800 RDIMM
  count: 1
storage:
  - model: Samsung 9100 Pro 4TB
    count: 1
circuit: us-208v-30a
"""


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False, env=env
    )
