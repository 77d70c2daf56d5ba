"""The guide's rules on a build: `check_build(build, workload=None) -> CheckResult`.

Importing this package registers every rule (one module per part of the guide); the registry's
order is the order findings are reported in.
"""

from dlrig.rules import cooling, cpu, fit, gpu, memory, power, software, storage
from dlrig.rules.engine import (
    RULES,
    CheckResult,
    Finding,
    Rule,
    check_build,
    first_error,
    guide_order,
)

# The modules are imported for their @rule registrations.
_RULE_MODULES = (power, cpu, memory, cooling, fit, storage, gpu, software)
RULES.sort(key=guide_order)

__all__ = ["RULES", "CheckResult", "Finding", "Rule", "check_build", "first_error"]
