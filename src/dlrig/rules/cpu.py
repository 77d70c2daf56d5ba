"""CPU and PCIe rules: cores per GPU (CPU.1, and the workstation builders' CPU.cores), clock
(CPU.3), oversized CPUs (CPU.4), lanes (PCIE.1-3, and PCIE.cpu for 3+ GPUs), and whether
CPU and board or platform fit together (COMPAT.socket, COMPAT.lanes)."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

from dlrig.catalog.prices import paid_count, unit_price_usd
from dlrig.enums import Bottleneck, PreprocessingStrategy
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts

# CPU.1: cores and threads each GPU needs, by preprocessing strategy.
CORES_PER_GPU = {PreprocessingStrategy.ONLINE: 2, PreprocessingStrategy.OFFLINE: 1}
THREADS_PER_GPU = {PreprocessingStrategy.ONLINE: 4, PreprocessingStrategy.OFFLINE: 2}
# CPU.3: "> 2 GHz".
MIN_BASE_GHZ = 2.0
# CPU.4: more cores than this many times the need (and more than a desktop's 16) is oversized.
OVERSIZE_FACTOR = 4
OVERSIZE_MIN_CORES = 16
# PCIE.2: with 4 or more GPUs each needs 8 lanes; PCIE.3: x4 is the least a GPU slot gives.
MULTI_GPU_LANES = 8
MULTI_GPU_FROM = 4
MIN_GPU_LANES = 4
# CPU.cores and PCIE.cpu: Puget Systems, "Hardware Recommendations for Machine Learning /
# AI" (Kinghorn; 2024-04-09 clip): "at least 4 cores for each GPU accelerator"; "a 16-core
# processor would generally be considered minimal for this type of workstation"; Xeon W and
# Threadripper PRO for "the PCIe lanes for multiple GPUs". Every 3+ GPU reference build of
# expert_builds.md (tinybox, WOPR, Wallner, autonomous-ai) sits on EPYC, Threadripper or Xeon W.
PUGET_CORES_PER_GPU = 4
PUGET_MIN_CORES = 16
WORKSTATION_FROM_GPUS = 3
# CPU.4: "each core beyond the need adds 0-5% at most"; a smaller CPU that costs the model's
# estimate more than this is not oversized for the workload.
CORE_LOSS_TOLERATED = 0.05

if TYPE_CHECKING:
    from dlrig.model.result import Estimate


def same_socket(a: str, b: str) -> bool:
    """'sTR5' and 'STR5', 'LGA 1700' and 'LGA1700' are the same socket."""
    return (
        a.replace(" ", "").replace("-", "").lower() == b.replace(" ", "").replace("-", "").lower()
    )


def _strategy(f: Facts) -> PreprocessingStrategy | None:
    return f.workload.preprocessing_strategy if f.workload is not None else None


def _estimate_with_cores(f: Facts, cores: int | None = None) -> Estimate | None:
    """The model's estimate of the build on the workload (the one `dlrig estimate` prints),
    with the CPU cut to `cores` per socket when given; None without a workload or CPU."""
    from dlrig.model.estimate import estimate

    cpu = f.build.cpu
    if f.workload is None or cpu is None:
        return None
    if cores is None or cores == cpu.cores:
        if f not in _AS_BUILT:
            _AS_BUILT[f] = estimate(f.build, f.workload)
        return _AS_BUILT[f]
    threads = max(cores * cpu.threads // cpu.cores, cores)
    smaller = cpu.model_copy(update={"cores": cores, "threads": threads})
    return estimate(dataclasses.replace(f.build, cpu=smaller), f.workload)


def _fewest_cores_kept(f: Facts, full_rate: float, low: int, high: int) -> int:
    """The fewest cores per socket in [low, high] at which the model's estimate loses at most
    CORE_LOSS_TOLERATED of full_rate (high does; more cores never slow the estimate, so a
    bisection finds it)."""
    while low < high:
        mid = (low + high) // 2
        cut = _estimate_with_cores(f, mid)
        if cut is not None and 1.0 - cut.samples_per_s / full_rate <= CORE_LOSS_TOLERATED:
            high = mid
        else:
            low = mid + 1
    return high


# CPU.1 and CPU.4 read the same estimate of a build: computed once per Facts.
_AS_BUILT: weakref.WeakKeyDictionary[Facts, Estimate] = weakref.WeakKeyDictionary()


@rule(
    "CPU.1",
    reads=(
        "cpu.cores",
        "cpu.threads",
    ),
)
def cores_per_gpu(f: Facts) -> Iterator[Judgement]:
    """Preprocessing while training wants >= 4 threads (2 cores) per GPU; preprocessing once
    before training wants >= 2 threads (1 core) per GPU."""
    if not f.cards:
        return
    if f.cpu_cores is None or f.cpu_threads is None:
        yield unknown("CPU cores per GPU", "no CPU given")
        return
    n = f.n_gpus
    cores, threads = f.cpu_cores, f.cpu_threads
    evidence: dict[str, object] = {
        "cores": cores,
        "threads": threads,
        "gpus": n,
        "cores_per_gpu": round(cores / n, 2),
        "threads_per_gpu": round(threads / n, 2),
    }
    have = f"{cores} cores / {threads} threads for {n} GPU{'s' if n > 1 else ''}"

    def enough(s: PreprocessingStrategy) -> bool:
        return cores >= CORES_PER_GPU[s] * n and threads >= THREADS_PER_GPU[s] * n

    def need(s: PreprocessingStrategy) -> str:
        cores_needed, threads_needed = CORES_PER_GPU[s] * n, THREADS_PER_GPU[s] * n
        return f"{s.value} preprocessing needs {cores_needed} cores / {threads_needed} threads"

    strategy = _strategy(f)
    if strategy is not None:
        evidence["strategy"] = strategy.value
        if not enough(strategy):
            yield error(
                f"{have}: {need(strategy)}",
                evidence,
                "a CPU with more cores, fewer GPUs, or preprocess the data once before training",
            )
            return
        # The model can only add a warning here: skip it when only errors are wanted.
        est = None if f.errors_only else _estimate_with_cores(f)
        if est is not None and est.bottleneck is Bottleneck.CPU_PREPROCESSING:
            # The guide's per-GPU counts are a floor; a workload whose samples take long to
            # decode can still starve the GPUs, and the estimate says so: speak with one voice.
            cpu_s = est.stages_s[Bottleneck.CPU_PREPROCESSING]
            evidence["model_cpu_preprocessing_s"] = round(cpu_s, 4)
            evidence["model_step_s"] = round(est.step_time_s, 4)
            yield warning(
                f"{have}: the guide's {need(strategy)}, but the model's estimate for "
                f"{f.workload.name if f.workload else 'the workload'} is cpu_preprocessing-bound "
                f"({cpu_s * 1000:.0f} ms of preprocessing per step)",
                evidence,
                est.advice,
            )
            return
        yield info(f"{have}: enough for {strategy.value} preprocessing", evidence)
        return
    off, on = PreprocessingStrategy.OFFLINE, PreprocessingStrategy.ONLINE
    if not enough(off):
        yield error(f"{have}: even {need(off)}", evidence, "a CPU with more cores, or fewer GPUs")
    elif not enough(on):
        yield warning(
            f"{have}: enough only if the data is preprocessed before training; {need(on)}",
            evidence,
            "a CPU with 2 cores per GPU, or preprocess once before training (CPU.1 strategy 2)",
        )
    else:
        yield info(f"{have}: enough even for preprocessing while training", evidence)


@rule("CPU.cores", reads=("cpu.cores",), bar=True)
def workstation_cores(f: Facts) -> Iterator[Judgement]:
    """At least 4 CPU cores for each GPU, and 16 at least for a 3+ GPU workstation (Puget
    Systems): the data loaders, the training processes and the OS share them."""
    if not f.cards or f.cpu_cores is None:
        return  # CPU.1 says what it cannot judge
    n = f.n_gpus
    need = PUGET_CORES_PER_GPU * n
    if n >= WORKSTATION_FROM_GPUS:
        need = max(need, PUGET_MIN_CORES)
    evidence = {"cores": f.cpu_cores, "gpus": n, "needed": need}
    have = f"{f.cpu_cores} cores for {n} GPU{'s' if n > 1 else ''}"
    if f.cpu_cores < need:
        floor = (
            f" and {PUGET_MIN_CORES} at least with 3+ GPUs" if n >= WORKSTATION_FROM_GPUS else ""
        )
        yield warning(
            f"{have}: workstation builders put {PUGET_CORES_PER_GPU} per GPU{floor} "
            f"({need} here; Puget Systems)",
            evidence,
            f"a CPU with >= {need} cores"
            + (" (Threadripper, Threadripper PRO, EPYC, Xeon W)" if n >= 3 else ""),
        )
    else:
        yield info(f"{have}: >= {need}, the workstation builders' bar (Puget Systems)", evidence)


@rule(
    "PCIE.cpu",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
    bar=True,
)
def workstation_lanes(f: Facts) -> Iterator[Judgement]:
    """With 3 or more GPUs, a workstation or server platform whose CPU lanes feed every GPU at
    x8 or more, none behind the chipset (Puget Systems: Xeon W, Threadripper PRO)."""
    if f.n_gpus < WORKSTATION_FROM_GPUS:
        return
    links = f.links
    if links is None:
        return  # PCIE.2/PCIE.3 say what they cannot judge
    placement = f.placement
    chipset = (
        {s.card for s in placement.seats if not s.slot.from_cpu} if placement is not None else set()
    )
    # Below x8 with 4+ GPUs is PCIE.2's error; this rule adds what it leaves: the chipset, and
    # the third card.
    narrow = (
        {i for i, lk in enumerate(links) if 0 < lk.lanes < MULTI_GPU_LANES}
        if f.n_gpus < MULTI_GPU_FROM
        else set()
    )
    short = sorted(chipset | narrow)
    evidence = {
        "gpus": f.n_gpus,
        "lanes_per_gpu": [lk.lanes for lk in links],
        "chipset_gpus": sorted(chipset),
        "needed_per_gpu": MULTI_GPU_LANES,
    }
    if short:
        where = []
        if chipset:
            where.append(f"{len(chipset)} behind the chipset")
        if narrow - chipset:
            where.append(f"{len(narrow - chipset)} at x{min(links[i].lanes for i in narrow)}")
        yield warning(
            f"{f.n_gpus} GPUs with {' and '.join(where)}: workstation builders feed each of 3+ "
            f"GPUs from the CPU's own lanes at x{MULTI_GPU_LANES} or more",
            evidence,
            "a workstation or server platform (Threadripper, Threadripper PRO, EPYC, Xeon W) "
            "with a CPU-wired x8+ slot per GPU",
        )
    else:
        seated = [lk.lanes for lk in links if lk.lanes > 0]
        if seated:  # cards without a slot are MB.1's to report
            yield info(
                f"each seated GPU of the {f.n_gpus} gets >= x{min(seated)} from the CPU's own "
                "lanes",
                evidence,
            )


@rule(
    "CPU.3",
    reads=(
        "cpu.cores",
        "cpu.base_ghz",
    ),
)
def cpu_clock(f: Facts) -> Iterator[Judgement]:
    """1-2 cores per GPU depending on preprocessing, > 2 GHz, supporting the GPU count; clock
    rate matters little (CPU.2: small losses when underclocked)."""
    cpu = f.build.cpu
    if cpu is None or not f.cards:
        return
    if cpu.base_ghz < MIN_BASE_GHZ:
        yield info(
            f"{cpu.name} runs at {cpu.base_ghz:g} GHz base, under the guide's 2 GHz: kernel "
            "launches and Python run a little slower",
            {"base_ghz": cpu.base_ghz, "boost_ghz": cpu.boost_ghz, "min_ghz": MIN_BASE_GHZ},
        )


@rule("CPU.4", reads=("cpu.cores",), errors=False)
def oversized_cpu(f: Facts) -> Iterator[Judgement]:
    """Don't buy an overpowered CPU (the second most common CPU mistake): each core beyond the
    need adds 0-5% at most."""
    cpu = f.build.cpu
    if cpu is None or f.cpu_cores is None or not f.cards:
        return
    # The top of the guide's range (2 cores per GPU) sets the need whatever the strategy: a
    # CPU bought for lanes is not oversized because this one workload preprocesses offline.
    need = CORES_PER_GPU[PreprocessingStrategy.ONLINE] * f.n_gpus
    limit = max(OVERSIZE_MIN_CORES, OVERSIZE_FACTOR * need)
    if f.cpu_cores <= limit:
        return
    # the price dlrig adds up (street, else launch), in the command's currency, for the CPUs
    # the user does not already have (`--own`): an owned CPU costs nothing, so nothing is
    # saved by buying a smaller one
    unit_usd = unit_price_usd(cpu)
    to_buy = paid_count(cpu, f.build.cpu_count)
    price = f" ({f.currency.format(unit_usd * to_buy)})" if unit_usd and to_buy else ""
    if not to_buy:
        price = " (yours already)"
    message = (
        f"{f.cpu_cores} cores{price} for {f.n_gpus} GPU{'s' if f.n_gpus > 1 else ''}: even "
        f"preprocessing while training needs {need}; beyond {limit} each core adds 0-5% at most"
    )
    evidence: dict[str, object] = {
        "cores": f.cpu_cores,
        "cores_needed": need,
        "oversize_above": limit,
        "cpus_to_buy": to_buy,
    }
    fix = "a CPU with fewer cores that still gives the GPUs' lanes"
    full = _estimate_with_cores(f)
    smaller = _estimate_with_cores(f, max(limit // f.build.cpu_count, 1))
    if full is not None and smaller is not None and full.samples_per_s > 0:
        # The workload decides what "the need" is: the model's estimate on a CPU cut to the
        # guide's limit says whether the cores beyond it buy speed here.
        loss = 1.0 - smaller.samples_per_s / full.samples_per_s
        evidence["model_loss_at_limit"] = round(loss, 4)
        workload = f.workload.name if f.workload else "the workload"
        if loss > CORE_LOSS_TOLERATED:
            yield info(
                f"{f.cpu_cores} cores for {f.n_gpus} GPU{'s' if f.n_gpus > 1 else ''}: the "
                f"model's estimate for {workload} is {loss:.0%} slower with {limit} cores "
                f"({smaller.bottleneck.value}-bound), so they are not oversized",
                evidence,
            )
            return
        sockets = f.build.cpu_count
        at_need = _estimate_with_cores(f, max(need // sockets, 1))
        loss_need = 1.0 - at_need.samples_per_s / full.samples_per_s if at_need else 0.0
        evidence["model_loss_at_need"] = round(loss_need, 4)
        # The guide's 2 cores a GPU is a floor, not what the workload needs: the estimate
        # says where its speed starts to fall, and the message names that, not the floor
        # (it said "needs 4" beside "-80% at 4" for resnet50 on 2x RTX 4090).
        kept = _fewest_cores_kept(f, full.samples_per_s, max(need // sockets, 1), limit // sockets)
        evidence["model_fewest_cores"] = kept * sockets
        floor = (
            f"the guide's floor of {need}"
            if kept * sockets <= need
            else f"{kept * sockets} ({loss_need:.0%} slower at the guide's floor of {need})"
        )
        message = (
            f"{f.cpu_cores} cores{price} for {f.n_gpus} GPU{'s' if f.n_gpus > 1 else ''}: the "
            f"model's estimate for {workload} loses {loss:.0%} at {limit} cores and stays "
            f"within {CORE_LOSS_TOLERATED:.0%} down to {floor}"
        )
        fix = (
            f"a CPU with {kept * sockets}-{limit} cores that still gives the GPUs' lanes "
            f"(the model's estimate for {workload}: -{loss:.0%} at {limit} cores)"
        )
    if not to_buy:
        yield info(message + "; it is yours already, so a smaller one would save nothing", evidence)
    elif f.desktop:
        yield warning(message, evidence, fix)
    else:
        yield info(message + " (the server platform sets the CPU class)", evidence)


@rule(
    "PCIE.1",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
)
def lanes_hardly_matter(f: Facts) -> Iterator[Judgement]:
    """Lanes hardly matter for up to 4 GPUs: a 32-image ImageNet batch takes 1.1 ms over x16,
    2.3 ms over x8, 4.5 ms over x4 (about 2x that in practice), 0% with pinned memory."""
    if not 1 <= f.n_gpus < MULTI_GPU_FROM:
        return
    links = f.links
    if links is None:
        return
    narrow = sorted({lk.lanes for lk in links if 0 < lk.lanes < 16})
    if narrow:
        widths = "/".join(f"x{w}" for w in narrow)
        yield info(
            f"some GPUs run at {widths}: with {f.n_gpus} GPU{'s' if f.n_gpus > 1 else ''} "
            "that costs little (x4 adds ~4.5 ms per 32-image batch, 0% with a pinned-memory "
            "loader); don't pay for lanes",
            {"lanes": [lk.lanes for lk in links]},
        )


@rule(
    "PCIE.2",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
)
def lanes_per_gpu(f: Facts) -> Iterator[Judgement]:
    """With 4 GPUs make sure each gets 8 lanes (32 in all); with 2-3 GPUs ignore lanes; don't
    pay extra for more lanes per GPU."""
    if f.n_gpus < MULTI_GPU_FROM:
        return  # the guide: 1-3 GPUs are never judged by lanes
    links = f.links
    if links is None:
        yield unknown(f"PCIe lanes for {f.n_gpus} GPUs", "no CPU, motherboard or platform given")
        return
    # Cards without a slot are MB.1's to report; the lanes of the seated ones are judged here.
    lanes = [lk.lanes for lk in links if lk.lanes > 0]
    if not lanes:
        return
    evidence = {
        "gpus": f.n_gpus,
        "lanes_per_gpu": lanes,
        "needed_per_gpu": MULTI_GPU_LANES,
        "basis": sorted({lk.basis for lk in links}),
    }
    low = [lk for lk in links if 0 < lk.lanes < MULTI_GPU_LANES]
    if low:
        worst = min(lk.lanes for lk in low)
        basis = low[0].basis
        yield error(
            f"{len(low)} of {f.n_gpus} GPUs get x{worst} ({basis}); {f.n_gpus} GPUs want >= x8 "
            f"each ({MULTI_GPU_LANES * f.n_gpus} lanes in all)",
            evidence,
            "a CPU and board with more lanes (Threadripper, Xeon W, EPYC), or fewer GPUs",
        )
    else:
        yield info(f"every GPU gets >= x{min(lanes)}: enough for {f.n_gpus} GPUs", evidence)


@rule(
    "PCIE.3",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
)
def cpu_supports_gpu_count(f: Facts) -> Iterator[Judgement]:
    """The CPU and motherboard together must support the number of GPUs planned (slots, lanes,
    spacing): that, not lane count, is the common mistake."""
    if not f.cards or not f.desktop:
        return
    cpu = f.build.cpu
    if cpu is None:
        yield unknown(f"whether the CPU supports {f.n_gpus} GPUs", "no CPU given")
        return
    lanes = cpu.pcie_lanes * f.build.cpu_count
    if lanes < MIN_GPU_LANES * f.n_gpus:
        yield error(
            f"{cpu.name} has {lanes} PCIe lanes: not even x4 for each of {f.n_gpus} GPUs",
            {"cpu_lanes": lanes, "gpus": f.n_gpus, "needed": MIN_GPU_LANES * f.n_gpus},
            "a CPU with more lanes (Threadripper, Xeon W, EPYC) or fewer GPUs",
        )
        return
    placement = f.placement
    if placement is None:
        return
    chipset = [s.card for s in placement.seats if not s.slot.from_cpu]
    # With 3+ GPUs PCIE.cpu judges the chipset slots (the expert bar).
    if chipset and 1 < f.n_gpus < WORKSTATION_FROM_GPUS:
        yield warning(
            f"{len(chipset)} GPU{'s sit' if len(chipset) > 1 else ' sits'} in chipset-wired "
            "slots, sharing the chipset's link to the CPU with disks and network",
            {"chipset_gpus": chipset},
            "a board whose GPU slots are all wired to the CPU",
        )


@rule(
    "COMPAT.lanes",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
)
def link_downgrades(f: Facts) -> Iterator[Judgement]:
    """A card runs at the width and generation its slot gives, which may be less than it can do."""
    links = f.links
    if links is None or not f.cards:
        return
    down = [
        (i, c, lk)
        for i, (c, lk) in enumerate(zip(f.cards, links, strict=True))
        if lk.lanes and (lk.lanes < c.gpu.pcie_lanes or lk.gen < c.gpu.pcie_gen)
    ]
    if down:
        i, card, lk = down[0]
        yield info(
            f"{len(down)} GPU link{'s run' if len(down) > 1 else ' runs'} below the card's "
            f"PCIe {card.gpu.pcie_gen}.0 x{card.gpu.pcie_lanes} (e.g. GPU {i}: PCIe {lk.gen}.0 "
            f"x{lk.lanes}, {lk.basis})",
            {"gpus": [j for j, _, _ in down], "lanes": [x.lanes for _, _, x in down]},
        )


@rule(
    "COMPAT.socket",
    reads=(
        "cpu.socket",
        "motherboard.socket",
        "platform.cpu_socket",
    ),
)
def cpu_socket(f: Facts) -> Iterator[Judgement]:
    """The CPU must fit the board's (or platform's) socket, chipset family and socket count."""
    cpu, board, platform = f.build.cpu, f.build.motherboard, f.platform
    host = board or platform
    if cpu is None and host is None:
        return
    if cpu is None:
        yield unknown("CPU socket", "no CPU given")
        return
    if host is None:
        yield unknown(f"whether {cpu.name} fits a board", "no motherboard or platform given")
        return
    socket = board.socket if board else platform.cpu_socket if platform else ""
    sockets = board.sockets if board else platform.cpu_sockets if platform else 1
    evidence = {"cpu_socket": cpu.socket, "board_socket": socket, "cpus": f.build.cpu_count}
    if not same_socket(cpu.socket, socket):
        yield error(
            f"{cpu.name} is {cpu.socket}; {host.name} takes {socket}",
            evidence,
            f"a {socket} CPU, or a {cpu.socket} board",
        )
        return
    families = host.cpu_families
    if families and "family" in cpu.unknown_fields:
        yield unknown(
            f"whether {cpu.name} is a {'/'.join(families)} CPU, as {host.name} needs",
            "the inline CPU gives no family",
            f"add family: {families[0]} (or the CPU's family) to the inline spec",
        )
        return
    if families and cpu.family not in families:
        yield error(
            f"{host.name} takes {', '.join(families)} CPUs on {socket}; {cpu.name} is {cpu.family}",
            {**evidence, "families": list(families)},
            f"a {'/'.join(families)} CPU",
        )
        return
    if f.build.cpu_count > sockets:
        yield error(
            f"{f.build.cpu_count} CPUs on a {sockets}-socket {host.name}",
            {**evidence, "sockets": sockets},
            f"at most {sockets} CPU{'s' if sockets > 1 else ''}",
        )
