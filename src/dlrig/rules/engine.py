"""The rule engine: a registry of small rules, each one guide id, and `check_build`.

A rule is a function of the build's `Facts` that yields `Judgement`s (severity, message,
evidence, fix); the engine stamps each with the rule's id to make a `Finding`. Rules register
with `@rule("PSU.1", reads=("gpu.tdp_w", ...))`; their docstring quotes the guide's reasoning.
A check that cannot be judged for lack of data yields an info whose message starts with
"unknown:", never nothing; the engine does that itself for a rule whose declared `reads` a
partial inline spec left out (machine/partial.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from dlrig.catalog.currency import USD, Currency
from dlrig.enums import Severity

if TYPE_CHECKING:
    from dlrig.machine.model import Build
    from dlrig.rules.facts import Facts
    from dlrig.workloads.model import Workload


@dataclass(frozen=True)
class Finding:
    """One judgement on a build: which rule, how bad, why (with the numbers), what to do."""

    rule: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: str | None = None


@dataclass(frozen=True)
class CheckResult:
    """Every finding of a check, in rule order."""

    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """No error-level finding: the build works (warnings and infos may remain)."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return self.of(Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return self.of(Severity.WARNING)

    @property
    def infos(self) -> tuple[Finding, ...]:
        return self.of(Severity.INFO)

    def of(self, severity: Severity) -> tuple[Finding, ...]:
        """The findings of one severity."""
        return tuple(f for f in self.findings if f.severity is severity)

    def by_rule(self, rule_id: str) -> tuple[Finding, ...]:
        """The findings of one rule id."""
        return tuple(f for f in self.findings if f.rule == rule_id)

    @property
    def below_bar(self) -> tuple[Finding, ...]:
        """The warnings of the expert-bar rules (`bar_rules`): a build that works, but that the
        experts' configurators would not sell; the planner offers none of them."""
        bar = bar_rules()
        return tuple(f for f in self.warnings if f.rule in bar)


class Judgement(NamedTuple):
    """What a rule yields; the engine adds the rule id."""

    severity: Severity
    message: str
    evidence: dict[str, Any]
    fix: str | None = None


def error(message: str, evidence: dict[str, Any], fix: str | None = None) -> Judgement:
    """An error-level judgement: the build does not work as planned."""
    return Judgement(Severity.ERROR, message, evidence, fix)


def warning(message: str, evidence: dict[str, Any], fix: str | None = None) -> Judgement:
    """A warning: the build works but loses speed, money or safety margin."""
    return Judgement(Severity.WARNING, message, evidence, fix)


def info(message: str, evidence: dict[str, Any], fix: str | None = None) -> Judgement:
    """Information: a figure worth knowing, or a check that passed with a note."""
    return Judgement(Severity.INFO, message, evidence, fix)


def unknown(what: str, missing: str, fix: str | None = None) -> Judgement:
    """A check that cannot be judged: an info saying what data is missing."""
    return Judgement(Severity.INFO, f"unknown: {what}: {missing}", {"missing": missing}, fix)


RuleCheck = Callable[["Facts"], Iterable[Judgement]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: its id (a guide id or COMPAT.*), one-line title, and its check."""

    id: str
    title: str
    check: RuleCheck
    reads: tuple[str, ...] = ()
    errors: bool = True  # False: the rule never finds an error (check_build's errors_only skips it)
    # True: the rule's warnings are the expert bar (Puget, Stas Bekman, D2L, Answer.AI): `check`
    # reports them as warnings on a build that works, and `plan` offers no build that has one.
    bar: bool = False


RULES: list[Rule] = []

# Findings are reported in the guide's order of sections, then by id.
SECTION_ORDER = (
    "DP", "GPU", "RAM", "PCIE", "CPU", "DISK", "PSU", "CO2", "COOL", "MB", "CASE", "SW",
)  # fmt: skip


def guide_order(r: Rule) -> tuple[int, str]:
    """Sort key of a rule: its guide section (COMPAT.* and new sections last), then its id."""
    section = r.id.split(".", 1)[0]
    rank = SECTION_ORDER.index(section) if section in SECTION_ORDER else len(SECTION_ORDER)
    return rank, r.id


def rule(
    rule_id: str, *, reads: tuple[str, ...] = (), errors: bool = True, bar: bool = False
) -> Callable[[RuleCheck], RuleCheck]:
    """Register a check under rule_id; its docstring's first line becomes the title. `reads`
    names the part fields its judgement rests on (`gpu.tdp_w`, `cpu.socket`); `errors=False`
    says the rule never finds an error; `bar=True` makes its warnings the expert bar the
    planner holds builds to (`CheckResult.below_bar`)."""

    def register(check: RuleCheck) -> RuleCheck:
        if any(r.id == rule_id for r in RULES):
            raise ValueError(f"rule {rule_id} registered twice")  # a programming error
        doc = (check.__doc__ or rule_id).strip().splitlines()[0]
        RULES.append(Rule(rule_id, doc, check, reads, errors, bar))
        return check

    return register


def bar_rules() -> frozenset[str]:
    """The ids of the expert-bar rules."""
    return frozenset(r.id for r in RULES if r.bar)


def check_build(
    build: Build,
    workload: Workload | None = None,
    *,
    errors_only: bool = False,
    currency: Currency = USD,
) -> CheckResult:
    """Run every rule on build (and workload, when given); pure, no I/O. `errors_only`: only
    the errors are wanted (the planner's feasibility test): rules that never find one are
    skipped, and rules may skip work that only leads to warnings (`Facts.errors_only`).
    `currency`: the one the command shows prices in; the rules' messages state money in it.
    The expert-bar rules run under `errors_only` too: their warnings are what the planner
    refuses (`CheckResult.below_bar`)."""
    from dlrig.rules.facts import Facts

    facts = Facts(build, workload, errors_only=errors_only, currency=currency)
    judge = _judge_partial if build.has_partial_parts else _judge
    findings = [
        Finding(r.id, j.severity, j.message, j.evidence, j.fix)
        for r in RULES
        if r.errors or r.bar or not errors_only
        for j in judge(r, facts)
    ]
    return CheckResult(tuple(findings))


def first_error(
    build: Build,
    workload: Workload | None = None,
    *,
    expert_bar: bool = False,
    try_first: Sequence[str] = (),
) -> Finding | None:
    """The first error-level finding that a rule makes on build (with `expert_bar`, an
    expert-bar warning counts as one: `CheckResult.below_bar`), or None when there is none:
    `check_build(..., errors_only=True)` asked only whether the build works, stopping at the
    first rule that says no. The rules named in `try_first` run first (a search that sees the
    same rules fail over and over names them), the others in guide order; which error comes
    first may differ from `check_build`'s order, whether there is one does not."""
    from dlrig.rules.facts import Facts

    facts = Facts(build, workload, errors_only=True)
    judge = _judge_partial if build.has_partial_parts else _judge
    for r in _tried_first(try_first):
        if not (r.errors or r.bar):
            continue  # as check_build(errors_only=True) skips it
        bar = expert_bar and r.bar
        for j in judge(r, facts):
            if j.severity is Severity.ERROR or (bar and j.severity is Severity.WARNING):
                return Finding(r.id, j.severity, j.message, j.evidence, j.fix)
    return None


def _tried_first(ids: Sequence[str]) -> Iterator[Rule]:
    """Every rule once: those named in ids in that order, then the rest in registry order."""
    by_id = {r.id: r for r in RULES}
    named = [by_id[i] for i in dict.fromkeys(ids) if i in by_id]
    yield from named
    skip = {r.id for r in named}
    yield from (r for r in RULES if r.id not in skip)


def _judge(r: Rule, facts: Facts) -> Iterable[Judgement]:
    return r.check(facts)


def _judge_partial(r: Rule, facts: Facts) -> Iterable[Judgement]:
    """A rule would judge stated defaults, not the user's part: it says what it lacks instead
    (also where it would have passed silently: a silent pass on a default is no pass)."""
    missing = facts.build.unknown_inputs(r.reads)
    return [_lacking(r, missing)] if missing else r.check(facts)


def _lacking(r: Rule, missing: tuple[str, ...]) -> Judgement:
    """The unknown finding of a rule whose inputs a partial inline spec left out."""
    return Judgement(
        Severity.INFO,
        f"unknown: {r.id} rests on what the build does not give: {', '.join(missing)}",
        {"missing": list(missing)},
        "add the missing fields to the inline spec (or name a catalog part)",
    )
