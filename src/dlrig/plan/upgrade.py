"""The best next dollar: every single change to a build, with the changes it forces, priced from
the catalog, scored by the model, ranked by speed gained per dollar.

A change is one move (swap the GPUs, add a GPU, more RAM, a faster drive for the dataset, a
bigger PSU, water cooling, another CPU, another board) plus what it drags along: a GPU that
draws more needs a PSU that PSU.1 accepts; a third open-air card needs water (COOL.3/COOL.4);
a CPU for another socket needs a board for it, and that board may need other RAM. A change is
kept when the rule engine finds no error on the new build that the old one did not have. The
cost is what the new parts cost; swapped-out GPUs are credited at their resale (their dated used
price, else their newest price on the used-GPU depreciation curve: catalog/prices.resale),
other parts taken out at nothing; parts the user owns beyond the build
(`upgrade --own FILE`, plan/owned.py) cost nothing up to the count owned; `upgrade --new-only`
hands it a catalog without used-market prices (Catalog.without_used_prices), while the resale
of the build's own cards still reads the used market. A change is worth it when the model is
90% sure it makes the job faster at all (its same-GPU band for a change that keeps the GPU
model, the comparison band for a swap to another: plan.ties): a 1.03x swap is not.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TypeVar

from dlrig.catalog.currency import USD, Currency
from dlrig.catalog.loader import Catalog, normalize
from dlrig.catalog.prices import Resale, resale
from dlrig.catalog.schema import CPU, GPU, Case, Motherboard, PartBase
from dlrig.enums import Bottleneck, CoolerType, FormFactor
from dlrig.machine.loop import loop_radiators, radiators_fit_case
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, StorageDevice
from dlrig.mains import default_mains
from dlrig.model.power import size_build_psu
from dlrig.plan.assembles import (
    case_fits,
    cpu_fits_chassis,
    gpu_fits_chassis,
    memory_options,
    place_gpus,
    storage_holds,
)
from dlrig.plan.constraints import MAX_GPUS_PER_NODE
from dlrig.plan.evaluate import Evaluator, Outcome, WorkloadLike
from dlrig.plan.loop import plan_loop
from dlrig.plan.parts import Chassis, MemoryOption, price_of, priced, psu_output_w
from dlrig.plan.results import WeightedWorkload, job_storage_gb

P = TypeVar("P", bound=PartBase)

# A change must speed the job up by more than this to count as helping (model noise, rounding).
MIN_SPEEDUP = 1.005
# A change is worth its money when the model is this sure it makes the job faster at all: the
# speedup clears the model's band (plan.ties: the band is the 10th percentile of the ratio
# error, so this is the speedup 1 / band).
WORTH_IT_CHANCE = 0.9


@dataclass(frozen=True)
class Change:
    """One upgrade: its steps (the main move first, then what it forced), its cost, and the
    model's outcome on the changed build."""

    steps: tuple[str, ...]
    price_usd: float
    build: Build
    outcome: Outcome
    speedup: float
    # The rule errors the changed build still has (never more than the build had).
    errors: frozenset[str] = frozenset()
    # What the parts it takes out sell for (the swapped GPUs), and how dlrig knows.
    resale_usd: float = 0.0
    resale_basis: str = ""
    # The chance the change makes the job faster at all (the model's band: plan.ties).
    chance_faster: float = 1.0

    @property
    def summary(self) -> str:
        """The steps joined: 'swap GPUs -> 2x ... + PSU -> ...'."""
        return " + ".join(self.steps)

    @property
    def net_price_usd(self) -> float:
        """What the change costs once the parts it takes out are sold."""
        return self.price_usd - self.resale_usd

    @property
    def worth_it(self) -> bool:
        """The model is WORTH_IT_CHANCE sure the change makes the job faster (or it makes the
        job fit)."""
        return math.isinf(self.speedup) or self.chance_faster >= WORTH_IT_CHANCE

    @property
    def gain_per_1000_usd(self) -> float:
        """Fraction of speed gained per 1000 USD spent, net of the resale (0.25: +25% per 1000
        USD)."""
        if self.net_price_usd <= 0:
            return math.inf
        return (self.speedup - 1.0) / (self.net_price_usd / 1000.0)


@dataclass(frozen=True)
class UpgradeResult:
    """Changes that help within the budget, best first, and a verdict sentence."""

    build_name: str
    workload_name: str
    budget_usd: float
    current: Outcome
    changes: tuple[Change, ...]
    verdict: str
    evaluated: int
    # The rule errors the build has now (`dlrig check` fails it), and the cheapest single
    # change that leaves none, whatever the budget (None: none does, or nothing to repair).
    errors: tuple[str, ...] = ()
    repair: Change | None = None


@dataclass(frozen=True)
class _Draft:
    steps: tuple[str, ...]
    price_usd: float
    build: Build
    resale: Resale | None = None


class _Upgrader:
    def __init__(
        self,
        build: Build,
        workload: WorkloadLike,
        catalog: Catalog,
        evaluator: Evaluator,
        market: Catalog | None = None,
        today: dt.date | None = None,
    ) -> None:
        self.base = build
        self.workload = workload
        self.catalog = catalog
        self.evaluator = evaluator
        # Where the build's own cards sell (the used market, even under --new-only), and when.
        self.market = market or catalog
        self.today = today
        # Spare parts the user owns (`--own`): the catalog's copies that know their count.
        self.owned = {
            normalize(p.name): p for items in catalog.parts.values() for p in items if p.owned_count
        }
        self.dataset_gb = job_storage_gb([WeightedWorkload(workload)])  # dataset and job files
        self.base_rules = self._rules(("base",), build)
        self.evaluated = 0

    def _rules(self, key: Hashable, build: Build) -> set[str]:
        errors = self.evaluator.errors(("upgrade", key), build, self.workload)
        return {e.rule for e in errors}

    # --- forced follow-ups -------------------------------------------------------------------

    def _force(self, draft: _Draft) -> _Draft | None:
        """Add what the rules demand after a move: water for stacked open-air cards, RAM to the
        largest GPU's memory, a PSU that PSU.1 accepts, a case the cards fit."""
        for fix in (self._force_cooling, self._force_ram, self._force_psu, self._force_case):
            fixed = fix(draft)
            if fixed is None:
                return None
            draft = dataclasses.replace(fixed, resale=draft.resale)
        return draft

    def _force_cooling(self, d: _Draft) -> _Draft | None:
        b = d.build
        if self.base.gpu_count >= 3 or b.gpu_count < 3 or b.platform is not None:
            return d
        if not any(g.cooler is CoolerType.OPEN_AIR for g in b.gpus):
            return d
        watered = self._watered(b)
        if watered is None:
            return None
        usd, build = watered
        return _Draft(
            (*d.steps, f"a water loop for {b.gpu_count} GPUs (COOL.3, COOL.7)"),
            d.price_usd + usd,
            build,
        )

    def _watered(self, b: Build) -> tuple[float, Build] | None:
        """The build with its cards on a loop priced from the catalog's parts (plan/loop.py),
        and the loop's price; None when no loop can be priced for them."""
        if len({g.gpu.name for g in b.gpus}) != 1:
            return None  # one block model per loop: mixed cards are not planned
        gpu = b.gpus[0].gpu
        heat_w = sum(g.board_power_w * g.count for g in b.gpus)
        # the build's own case keeps the cards where it mounts a loop for them (CASE.1); else
        # the cheapest loop, and _force_case finds a case that mounts it
        loop = plan_loop(gpu, b.gpu_count, heat_w, self.catalog.cooling, b.case).plan
        if loop is None:
            loop = plan_loop(gpu, b.gpu_count, heat_w, self.catalog.cooling).plan
        if loop is None:
            return None
        gpus = tuple(dataclasses.replace(g, cooler_override=CoolerType.WATER) for g in b.gpus)
        return loop.price_usd, dataclasses.replace(b, gpus=gpus, loop=loop.entries)

    def _force_ram(self, d: _Draft) -> _Draft | None:
        b = d.build
        need = b.largest_gpu_memory_gb or 0.0
        have = b.memory.size_gb if b.memory is not None else 0.0
        base_need = self.base.largest_gpu_memory_gb or 0.0
        if have >= need or need <= base_need or self._chassis(b) is None:
            return d
        option = self._cheapest_memory(b, need)
        if option is None:
            return None
        return _Draft(
            (*d.steps, f"RAM -> {option.count}x {option.kit.name} (RAM.2: >= {need:g} GiB)"),
            d.price_usd + option.price_usd,
            dataclasses.replace(b, memory=option.config()),
        )

    def _force_psu(self, d: _Draft) -> _Draft | None:
        b = d.build
        if b.psu is None:
            return d
        need_w = size_build_psu(b).recommended_w
        low_line = (b.mains or default_mains()).circuit.low_line
        if (psu_output_w(b.psu, low_line) or 0.0) * b.psu_count >= need_w:
            return d
        psu = self._cheapest(
            [p for p in self.catalog.psus if (psu_output_w(p, low_line) or 0.0) >= need_w],
            what="psus",
        )
        if psu is None:
            return None
        return _Draft(
            (*d.steps, f"PSU -> {psu.name} (PSU.1: {need_w} W)"),
            d.price_usd + price_of(psu),
            dataclasses.replace(b, psu=psu, psu_count=1),
        )

    def _force_case(self, d: _Draft) -> _Draft | None:
        b = d.build
        if b.case is None or not b.gpus:
            return d
        gpu = max((g.gpu for g in b.gpus), key=lambda g: g.length_mm or 0.0)
        # a loop this upgrade added must go on the case's mounts (CASE.1)
        added_loop = b.loop != self.base.loop and _water(b)
        if _case_takes(b.case, b.motherboard, gpu, b.gpu_count) and (
            not added_loop or radiators_fit_case(loop_radiators(b.loop), b.case) is True
        ):
            return d
        case = self._cheapest(
            [
                c
                for c in self.catalog.cases
                if _case_takes(c, b.motherboard, gpu, b.gpu_count)
                and (not _water(b) or radiators_fit_case(loop_radiators(b.loop), c) is True)
            ],
            what="cases",
        )
        if case is None:
            return None
        return _Draft(
            (*d.steps, f"case -> {case.name} (CASE.1)"),
            d.price_usd + price_of(case),
            dataclasses.replace(b, case=case),
        )

    # --- helpers -------------------------------------------------------------------------------

    def _cheapest(self, parts: Sequence[P], what: str) -> P | None:
        usable = [p for p in parts if priced(p)]
        return min(usable, key=price_of, default=None)

    def _chassis(self, b: Build) -> Chassis | None:
        if b.platform is not None:
            return Chassis(platform=b.platform)
        if b.motherboard is not None:
            return Chassis(board=b.motherboard)
        return None

    def _cheapest_memory(self, b: Build, size_gb: float) -> MemoryOption | None:
        chassis = self._chassis(b)
        if chassis is None:
            return None
        options = [
            m
            for m in memory_options(chassis, [k for k in self.catalog.memory if priced(k)])
            if m.size_gb >= size_gb
        ]
        return min(options, key=lambda m: (m.price_usd, m.size_gb), default=None)

    def _fits_slots(self, b: Build, gpu: GPU, count: int) -> bool:
        chassis = self._chassis(b)
        if chassis is None:
            return gpu.form == FormFactor.PCIE
        return gpu_fits_chassis(chassis, gpu, count)

    # --- the moves -----------------------------------------------------------------------------

    def moves(self) -> Iterator[_Draft]:
        """Every single change to the build, before the changes it forces."""
        yield from self._gpu_moves()
        yield from self._ram_moves()
        yield from self._storage_moves()
        yield from self._psu_moves()
        yield from self._cooling_moves()
        yield from self._cpu_moves()

    def _sold(self) -> Resale | None:
        """What the build's GPUs sell for, all of them (None: one of them has no resale dlrig
        can state, or no date to count from)."""
        if not self.base.gpus or self.today is None:
            return None
        total, bases = 0.0, []
        for g in self.base.gpus:
            known = next((p for p in self.market.gpus if p.name == g.gpu.name), g.gpu)
            each = resale(known, self.today)
            if each is None:
                return None
            total += each.usd * g.count
            bases.append(f"{g.count}x {g.gpu.name} at {each.usd:,.0f} USD each, {each.basis}")
        return Resale(total, "; ".join(bases))

    def _gpu_moves(self) -> Iterator[_Draft]:
        b = self.base
        count = max(b.gpu_count, 1)
        names = {g.gpu.name for g in b.gpus}
        sold = self._sold() if b.gpus else None
        for gpu in self.catalog.gpus:
            if not priced(gpu) or gpu.name in names or not self._fits_slots(b, gpu, count):
                continue
            new = dataclasses.replace(b, gpus=(GPUGroup(gpu=gpu, count=count),))
            verb = "swap" if b.gpus else "add"
            step = f"{verb} GPUs -> {count}x {gpu.name}"
            had_gb = min((g.gpu.memory_gb for g in b.gpus), default=0.0)
            if gpu.memory_gb < had_gb:
                # GPU.2: too little memory is the second most costly GPU mistake; say it.
                step += f" (LOSES GPU memory: {had_gb:g} -> {gpu.memory_gb:g} GiB per GPU, GPU.2)"
            yield _Draft((step,), price_of(gpu, count), new, sold)
        if len(b.gpus) == 1:
            group = b.gpus[0]
            # the spare cards the user owns of the build's model are added first, for nothing
            owned = self.owned.get(normalize(group.gpu.name))
            spare = owned if isinstance(owned, GPU) else group.gpu
            for extra in range(1, MAX_GPUS_PER_NODE - group.count + 1):
                total = group.count + extra
                if not priced(spare):
                    break
                draft = _Draft(
                    (f"add {extra}x {group.gpu.name} ({total} in all)",),
                    price_of(spare, extra),
                    dataclasses.replace(
                        b, gpus=(dataclasses.replace(group, gpu=spare, count=total),)
                    ),
                )
                if not self._fits_slots(b, group.gpu, total):
                    # A board with room for them (a spare card the user owns is no use on a
                    # board that seats one: upgrade offered nothing for it).
                    moved = self._with_board_for_cards(draft)
                    if moved is None:
                        break
                    draft = moved
                yield draft

    def _ram_moves(self) -> Iterator[_Draft]:
        b = self.base
        chassis = self._chassis(b)
        if chassis is None:
            return
        have = b.memory.size_gb if b.memory is not None else 0.0
        best: dict[float, MemoryOption] = {}
        for m in memory_options(chassis, [k for k in self.catalog.memory if priced(k)]):
            if m.size_gb > have and (
                m.size_gb not in best or m.price_usd < best[m.size_gb].price_usd
            ):
                best[m.size_gb] = m
        for size, m in sorted(best.items()):
            new = dataclasses.replace(b, memory=m.config())
            yield _Draft((f"RAM -> {m.count}x {m.kit.name} ({size:g} GiB)",), m.price_usd, new)

    def _storage_moves(self) -> Iterator[_Draft]:
        b = self.base
        current = b.dataset_storage
        # what the dataset drive reads now: the probe's figure when the build carries one
        read = b.storage_read_mb_s(current) if current is not None else 0.0
        for s in self.catalog.storage:
            if not priced(s) or s.read_mb_s <= read or not storage_holds(s, self.dataset_gb):
                continue
            others = tuple(dataclasses.replace(d, holds_dataset=False) for d in b.storage)
            new = dataclasses.replace(
                b, storage=(*others, StorageDevice(device=s, count=1, holds_dataset=True))
            )
            yield _Draft(
                (
                    f"add {s.name} ({s.kind.value}, {s.read_mb_s:,.0f} MB/s) "
                    "for the dataset (DISK.3)",
                ),
                price_of(s),
                new,
            )

    def _psu_moves(self) -> Iterator[_Draft]:
        b = self.base
        if b.psu is None:
            return
        for p in self.catalog.psus:
            if priced(p) and p.watts > b.psu.watts * b.psu_count:
                yield _Draft(
                    (f"PSU -> {p.name} ({p.watts:g} W)",),
                    price_of(p),
                    dataclasses.replace(b, psu=p, psu_count=1),
                )

    def _cooling_moves(self) -> Iterator[_Draft]:
        b = self.base
        if b.platform is not None or not b.gpus or _water(b):
            return
        watered = self._watered(b)
        if watered is None:
            return
        usd, build = watered
        yield _Draft((f"a water loop for {b.gpu_count} GPUs (COOL.4, COOL.7)",), usd, build)

    def _cpu_moves(self) -> Iterator[_Draft]:
        b = self.base
        if b.platform is not None and b.platform.included_cpu is not None:
            return
        current = b.cpu
        socket = normalize(current.socket) if current is not None else None
        count = b.cpu_count
        for cpu in self.catalog.cpus:
            if not priced(cpu) or (current is not None and cpu.name == current.name):
                continue
            if current is not None and cpu.cores <= current.cores:
                continue
            if socket is None or normalize(cpu.socket) == socket or b.motherboard is None:
                if b.platform is not None and normalize(cpu.socket) != normalize(
                    b.platform.cpu_socket
                ):
                    continue
                new = dataclasses.replace(b, cpu=cpu)
                yield _Draft((f"CPU -> {cpu.name} ({cpu.cores} cores)",), price_of(cpu, count), new)
                continue
            board = self._board_for(cpu, b)
            if board is None:
                continue
            new = dataclasses.replace(b, cpu=cpu, motherboard=board, cpu_count=1)
            steps: tuple[str, ...] = (
                f"CPU -> {cpu.name} ({cpu.cores} cores)",
                f"board -> {board.name} (socket {board.socket})",
            )
            price = price_of(cpu) + price_of(board)
            memory = b.memory
            if memory is None or normalize(memory.memory_type or "") != normalize(
                board.memory_type
            ):
                option = self._cheapest_memory(new, memory.size_gb if memory else 0.0)
                if option is None:
                    continue
                new = dataclasses.replace(new, memory=option.config())
                steps = (*steps, f"RAM -> {option.count}x {option.kit.name} ({board.memory_type})")
                price += option.price_usd
            yield _Draft(steps, price, new)

    def _with_board_for_cards(self, d: _Draft) -> _Draft | None:
        """The draft on the cheapest board of its CPU's socket (and socket count) that seats
        all its cards, with RAM of that board's type when the build's is not; None on a server
        platform or when no board does."""
        b = d.build
        if b.motherboard is None or b.platform is not None:
            return None
        cpu = b.cpu
        boards = [
            m
            for m in self.catalog.motherboards
            if priced(m)
            and normalize(m.socket) == normalize(b.motherboard.socket)
            and (cpu is None or cpu_fits_chassis(Chassis(board=m), cpu))
            and m.sockets == b.cpu_count
            and all(place_gpus(m, g.gpu, b.gpu_count) is not None for g in b.gpus)
        ]
        board = min(boards, key=price_of, default=None)
        if board is None:
            return None
        new = dataclasses.replace(b, motherboard=board)
        steps = (*d.steps, f"board -> {board.name} (MB.1: slots for {b.gpu_count} GPUs)")
        price = d.price_usd + price_of(board)
        memory = b.memory
        if memory is None or not _takes_memory(board, memory):
            option = self._cheapest_memory(new, memory.size_gb if memory else 0.0)
            if option is None:
                return None
            new = dataclasses.replace(new, memory=option.config())
            steps = (*steps, f"RAM -> {option.count}x {option.kit.name} ({board.memory_type})")
            price += option.price_usd
        return _Draft(steps, price, new)

    def _board_for(self, cpu: CPU, b: Build) -> Motherboard | None:
        """The cheapest board for this CPU that takes the build's GPUs."""
        boards = [
            m
            for m in self.catalog.motherboards
            if priced(m)
            and cpu_fits_chassis(Chassis(board=m), cpu)
            and all(place_gpus(m, g.gpu, b.gpu_count) is not None for g in b.gpus)
        ]
        return min(boards, key=price_of, default=None)

    # --- scoring -------------------------------------------------------------------------------

    def score(self, draft: _Draft, before: Outcome) -> Change | None:
        """The change with what it forces, scored; None when the rules or the memory say no."""
        forced = self._force(draft)
        if forced is None:
            return None
        self.evaluated += 1
        key = ("upgrade", forced.steps)
        left = self._rules(forced.steps, forced.build)
        if not left <= self.base_rules:
            return None
        after = self.evaluator.outcome(key, forced.build, self.workload)
        if not after.fits:
            return None
        if before.fits and before.samples_per_s > 0:
            speedup = after.samples_per_s / before.samples_per_s
        else:
            speedup = math.inf
        sold = forced.resale
        return Change(
            forced.steps,
            forced.price_usd,
            forced.build,
            after,
            speedup,
            frozenset(left),
            resale_usd=sold.usd if sold is not None else 0.0,
            resale_basis=sold.basis if sold is not None else "",
            chance_faster=_chance_faster(self.base, forced.build, before, speedup),
        )


def _chance_faster(base: Build, changed: Build, before: Outcome, speedup: float) -> float:
    """The chance the change makes the job faster at all: its speedup against the model's band
    for the comparison (plan.ties.chance_ahead's normal log error), the narrower same-GPU band
    when the GPU model stays."""
    if not math.isfinite(speedup) or speedup <= 0:
        return 1.0
    same = {g.gpu.name for g in base.gpus} == {g.gpu.name for g in changed.gpus}
    band = before.same_gpu_ratio_low if same else before.comparison_ratio_low
    if band >= 1.0:
        return 1.0 if speedup > 1.0 else 0.0
    sigma = -math.log(band) / NormalDist().inv_cdf(WORTH_IT_CHANCE)
    return NormalDist().cdf(math.log(speedup) / sigma)


def _takes_memory(board: Motherboard, memory: MemoryConfig) -> bool:
    """The board takes the build's RAM as it is (its kits, their type and registration)."""
    kit = memory.kit
    if kit is None:
        return normalize(memory.memory_type or "") == normalize(board.memory_type)
    options = memory_options(Chassis(board=board), [kit])
    return any(o.count == memory.kit_count for o in options)


def _water(b: Build) -> bool:
    return any(g.cooler is CoolerType.WATER for g in b.gpus)


def _case_takes(case: Case, board: Motherboard | None, gpu: GPU, count: int) -> bool:
    """CASE.1: the case takes the cards (and the board, when the build names one)."""
    if board is None:
        return gpu.length_mm is None or gpu.length_mm <= case.max_gpu_length_mm
    return case_fits(case, board, gpu, count, water=False)


def upgrade(
    build: Build,
    workload: WorkloadLike,
    budget_usd: float,
    catalog: Catalog,
    evaluator: Evaluator,
    currency: Currency = USD,
    *,
    market: Catalog | None = None,
    today: dt.date | None = None,
) -> UpgradeResult:
    """Every single change to build (with what it forces) that speeds workload up, within
    budget_usd, ranked by speed gained per dollar net of the swapped GPUs' resale (`market`:
    the catalog whose used prices they sell at, default `catalog`; `today`: the day their age
    is counted to, None: no resale is credited); and a verdict, "not worth it" when the best
    affordable change is within the model's uncertainty (its money in currency)."""
    up = _Upgrader(build, workload, catalog, evaluator, market, today)
    before = evaluator.outcome(("upgrade", ("base",)), build, workload)
    helping: list[Change] = []
    repairs: list[Change] = []
    for draft in up.moves():
        change = up.score(draft, before)
        if change is None:
            continue
        if change.speedup > MIN_SPEEDUP:
            helping.append(change)
        if up.base_rules and not change.errors:
            repairs.append(change)
    # worth-it changes first (the model is sure they help), then most speed per net dollar
    helping.sort(key=lambda c: (not c.worth_it, -c.gain_per_1000_usd, c.price_usd, c.summary))
    affordable = tuple(c for c in helping if c.price_usd <= budget_usd + 1e-6)
    errors = tuple(sorted(up.base_rules))
    # A build that fails check is repaired first: the cheapest change that passes it, even
    # one that adds no speed (a board with a slot for every card).
    repair = min(repairs, key=lambda c: (c.price_usd, -c.speedup, c.summary), default=None)
    verdict = _verdict(before, affordable, helping, budget_usd, currency)
    if errors:
        # The repair says first what the build needs; "no change helps" would only repeat it.
        repair_line = _repair_line(errors, repair, currency)
        best_is_repair = bool(affordable) and affordable[0] is repair
        verdict = f"{repair_line}. {verdict}" if affordable and not best_is_repair else repair_line
    return UpgradeResult(
        build_name=build.name,
        workload_name=workload.name,
        budget_usd=budget_usd,
        current=before,
        changes=affordable,
        verdict=verdict,
        evaluated=up.evaluated,
        errors=errors,
        repair=repair,
    )


def _repair_line(errors: Sequence[str], repair: Change | None, currency: Currency) -> str:
    """'The build fails check now (MB.1, PCIE.2); the cheapest change that passes it: ...'."""
    line = f"The build fails check now ({', '.join(errors)})"
    if repair is None:
        return f"{line}; no single change passes it"
    gain = "makes the job fit" if math.isinf(repair.speedup) else f"{repair.speedup:.2f}x"
    return (
        f"{line}; the cheapest change that passes it: {repair.summary} for "
        f"{currency.format(repair.price_usd)} ({gain})"
    )


def _net(change: Change, money: Callable[[float], str]) -> str:
    """'700 USD after selling the old GPUs', or '1,200 USD back after selling them'."""
    net = change.net_price_usd
    if net < 0:
        return f"{money(-net)} back after selling the old GPUs"
    return f"{money(net)} after selling the old GPUs"


def _verdict(
    before: Outcome,
    affordable: Sequence[Change],
    helping: Sequence[Change],
    budget_usd: float,
    currency: Currency,
) -> str:
    money = currency.format
    worth = [c for c in affordable if c.worth_it]
    if worth:
        best = worth[0]
        gain = "makes the job fit" if math.isinf(best.speedup) else f"{best.speedup:.2f}x"
        net = f", {_net(best, money)}" if best.resale_usd > 0 else ""
        return (
            f"best next dollar: {best.summary} for {money(best.price_usd)}{net} ({gain}; now "
            f"{best.outcome.bottleneck.value}-bound)"
        )
    if affordable:
        best = affordable[0]
        net = f" ({_net(best, money)})" if best.resale_usd > 0 else ""
        return (
            f"not worth it: no change under {money(budget_usd)} is faster beyond the model's "
            f"uncertainty; the best, {best.summary}, is {best.speedup:.2f}x for "
            f"{money(best.price_usd)}{net}, and the model is only {best.chance_faster:.0%} sure "
            f"it is faster at all (it asks {WORTH_IT_CHANCE:.0%})"
        )
    if not before.fits:
        need = (
            f"the job does not fit in {before.gpu_available_gb:g} GiB per GPU "
            f"(it needs {before.gpu_required_gb:.1f} GiB)"
        )
        if not helping:
            return f"No change under this budget helps: {need} and no GPU the board takes has more"
        cheapest = min(helping, key=lambda c: c.price_usd)
        return (
            f"No change under {money(budget_usd)} helps: {need}; the cheapest change that "
            f"makes it fit ({cheapest.summary}) costs {money(cheapest.price_usd)}"
        )
    bound = before.bottleneck.value
    if not helping:
        where = (
            " on the best GPU the board takes"
            if before.bottleneck in (Bottleneck.GPU_COMPUTE, Bottleneck.GPU_MEMORY_BANDWIDTH)
            else ""
        )
        return f"No change under this budget helps, because the job is {bound}-bound{where}"
    cheapest = min(helping, key=lambda c: c.price_usd)
    return (
        f"No change under {money(budget_usd)} helps, because the job is {bound}-bound and "
        f"the cheapest change that helps ({cheapest.summary}) costs "
        f"{money(cheapest.price_usd)} ({cheapest.speedup:.2f}x)"
    )
