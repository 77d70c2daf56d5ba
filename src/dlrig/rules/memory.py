"""RAM rules: size against the largest GPU (RAM.2) and against all of them (RAM.total), speed
(RAM.1), and fit with CPU and board (COMPAT.memory)."""

from __future__ import annotations

from collections.abc import Iterator

from dlrig.machine.fit import memory_size_fits, memory_type_fits
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts
from dlrig.rules.gpu import training_memory_plan

# RAM.total: Stas Bekman, Machine Learning Engineering (compute/cpu-memory/README.md, 2023-11-07
# to 2026-07-07): "at least as much CPU memory on each node as there is on the GPUs"; Puget
# Systems' ML hardware recommendations (2024-04-09 clip): "at least double the amount of CPU
# memory as there is total GPU memory" (2x RTX 3090, 48 GB, rounded up to 128 GB).
STAS_RAM_PER_GPU_GB = 1.0
PUGET_RAM_PER_GPU_GB = 2.0

# JEDEC's standard speeds, MT/s: a kit above these is a "fast" (overclocked, XMP/EXPO) kit.
JEDEC_MAX_MT_S = {"DDR3": 1600, "DDR4": 3200, "DDR5": 5600}


@rule("RAM.2", reads=("gpu.memory_gb",))
def ram_size(f: Facts) -> Iterator[Judgement]:
    """RAM should be at least the largest GPU's memory (a 24 GB GPU wants >= 24 GB); less forces
    data to move piecemeal. Several GPUs do not need more than that."""
    largest = f.build.largest_gpu_memory_gb
    if largest is None:
        return
    if f.ram_gb is None:
        yield unknown("RAM size", "no memory given", f"buy >= {largest:g} GiB of RAM (RAM.2)")
        return
    evidence = {"ram_gb": f.ram_gb, "largest_gpu_memory_gb": largest}
    sockets = f.build.cpu_count if f.build.cpu is not None else 1
    if sockets > 1:
        yield from _ram_per_socket(f, f.ram_gb, largest, sockets)
        return
    if f.ram_gb < largest:
        yield error(
            f"{f.ram_gb:g} GiB RAM is below the largest GPU's {largest:g} GiB",
            evidence,
            f"buy >= {largest:g} GiB of RAM (the cheapest kit of that size: RAM.1)",
        )
    else:
        yield info(f"{f.ram_gb:g} GiB RAM >= the largest GPU's {largest:g} GiB", evidence)


def _ram_per_socket(f: Facts, ram_gb: float, largest: float, sockets: int) -> Iterator[Judgement]:
    """RAM.2 on a multi-socket board: each CPU feeds the GPUs on its own PCIe root from its own
    memory channels, so each socket's share must cover the largest GPU."""
    memory = f.build.memory
    modules = memory.kit.modules * memory.kit_count if memory and memory.kit else None
    channels = f.build.cpu.memory_channels if f.build.cpu else None
    per_socket = ram_gb / sockets
    evidence: dict[str, float | int | None] = {
        "ram_gb": ram_gb,
        "sockets": sockets,
        "ram_per_socket_gb": round(per_socket, 1),
        "largest_gpu_memory_gb": largest,
        "modules": modules,
        "channels_per_socket": channels,
    }
    fix = f"buy >= {largest * sockets:g} GiB of RAM, spread evenly over the {sockets} sockets"
    if modules is not None and modules < sockets:
        yield error(
            f"{modules} memory module(s) for {sockets} CPU sockets: a socket has no RAM of its "
            "own, and its GPUs' data crosses the inter-socket link",
            evidence,
            fix,
        )
        return
    filled = ""
    if modules is not None and channels is not None:
        filled = f" ({modules // sockets} modules per socket on {channels} channels)"
    if per_socket < largest:
        yield error(
            f"{ram_gb:g} GiB RAM over {sockets} sockets is {per_socket:g} GiB per socket{filled}, "
            f"below the largest GPU's {largest:g} GiB",
            evidence,
            fix,
        )
    else:
        yield info(
            f"{ram_gb:g} GiB RAM over {sockets} sockets is {per_socket:g} GiB per socket{filled}, "
            f">= the largest GPU's {largest:g} GiB",
            evidence,
        )


@rule("RAM.total", reads=("gpu.memory_gb",), bar=True)
def ram_for_all_gpus(f: Facts) -> Iterator[Judgement]:
    """At least as much RAM on each node as its GPUs hold together, and what CPU offload keeps
    there on top (Stas Bekman); Puget Systems recommends twice the total GPU memory."""
    if not f.cards or f.ram_gb is None:
        return  # RAM.2 says what it cannot judge
    total = sum(c.gpu.memory_gb for c in f.cards)
    plan = training_memory_plan(f)
    offload = plan.host_gb_per_node if plan is not None and plan.layout.cpu_offload else 0.0
    need = STAS_RAM_PER_GPU_GB * total + offload
    puget = PUGET_RAM_PER_GPU_GB * total + offload
    evidence = {
        "ram_gb": f.ram_gb,
        "gpu_memory_total_gb": total,
        "offload_gb": round(offload, 1),
        "needed_gb": round(need, 1),
        "recommended_gb": round(puget, 1),
    }
    of = f"the GPUs' {total:g} GiB together" + (
        f" plus {offload:.0f} GiB that CPU offload keeps in RAM" if offload else ""
    )
    if f.ram_gb < need:
        total_need = f" ({need:,.0f} GiB)" if offload else ""
        yield warning(
            f"{f.ram_gb:g} GiB RAM is below {of}{total_need}: loading the weights and "
            "checkpoints"
            + (" and holding the offloaded state" if offload else "")
            + " need it (Stas Bekman)",
            evidence,
            f"buy >= {need:,.0f} GiB of RAM (Puget recommends {puget:,.0f} GiB: twice the GPU "
            "memory)",
        )
    elif f.ram_gb < puget:
        yield info(
            f"{f.ram_gb:g} GiB RAM covers {of}; Puget recommends twice the GPU memory "
            f"({puget:,.0f} GiB) where the budget allows",
            evidence,
        )
    else:
        yield info(f"{f.ram_gb:g} GiB RAM is at least twice {of} (Puget)", evidence)


@rule("RAM.1")
def ram_speed(f: Facts) -> Iterator[Judgement]:
    """Clock speed does not matter: fast vs slow RAM changes deep-learning speed by 0-3%, and
    pinned memory moves batches by DMA. Buy the cheapest RAM of the right size."""
    memory = f.build.memory
    if memory is None or memory.speed_mt_s is None:
        return
    kind = (memory.memory_type or "").upper()
    limit = JEDEC_MAX_MT_S.get(kind)
    if limit is not None and memory.speed_mt_s > limit:
        yield info(
            f"{kind}-{memory.speed_mt_s} is a fast kit (JEDEC tops at {limit}): it buys 0-3% at "
            "most",
            {"speed_mt_s": memory.speed_mt_s, "jedec_max_mt_s": limit},
            "the cheapest kit of the same size does as well",
        )


@rule(
    "COMPAT.memory",
    reads=(
        "cpu.memory_type",
        "motherboard.memory_type",
        "motherboard.memory_slots",
        "motherboard.max_memory_gb",
        "platform.memory_type",
        "platform.memory_slots",
        "platform.max_memory_gb",
    ),
)
def memory_fit(f: Facts) -> Iterator[Judgement]:
    """The RAM must be the type the CPU and board take, within their maximum size and slots."""
    memory = f.build.memory
    if memory is None:
        return
    board, platform, cpu = f.build.motherboard, f.platform, f.build.cpu
    host = board or platform
    kind = (memory.memory_type or "").upper()
    if host is None and cpu is None:
        yield unknown("whether the RAM fits", "no CPU, motherboard or platform given")
        return
    host_type = board.memory_type if board else platform.memory_type if platform else None
    if host is not None and host_type and kind and not memory_type_fits(kind, host_type):
        yield error(
            f"{kind} RAM in {host.name}, which takes {host_type}",
            {"ram_type": kind, "takes": host_type},
            f"{host_type} RAM",
        )
    if cpu is not None and kind and host_type is None and kind != cpu.memory_type.upper():
        # Without a board the CPU's usual memory decides (some CPUs take two types).
        yield info(
            f"{kind} RAM with {cpu.name}, usually run with {cpu.memory_type}",
            {"ram_type": kind, "cpu_memory_type": cpu.memory_type},
        )
    limits: list[tuple[str, float]] = []
    if board is not None:
        limits.append((board.name, board.max_memory_gb))
    if platform is not None:
        limits.append((platform.name, platform.max_memory_gb))
    if cpu is not None and cpu.max_memory_gb:
        limits.append((f"{f.build.cpu_count}x {cpu.name}", cpu.max_memory_gb * f.build.cpu_count))
    for who, max_gb in limits:
        if not memory_size_fits(memory.size_gb, max_gb):
            yield error(
                f"{memory.size_gb:g} GiB RAM; {who} takes at most {max_gb:g} GiB",
                {"ram_gb": memory.size_gb, "max_gb": max_gb},
                f"<= {max_gb:g} GiB",
            )
    kit = memory.kit
    slots = board.memory_slots if board else platform.memory_slots if platform else None
    if kit is not None and slots is not None:
        modules = kit.modules * memory.kit_count
        if modules > slots:
            yield error(
                f"{modules} memory modules; {host.name if host else ''} has {slots} slots",
                {"modules": modules, "slots": slots},
                "fewer, larger modules",
            )
        registered = (
            board.memory_registered if board else platform.memory_registered if platform else None
        )
        if registered is not None and kit.registered != registered:
            want = "registered (RDIMM)" if registered else "unbuffered (UDIMM)"
            yield error(
                f"{kit.name} is {'registered' if kit.registered else 'unbuffered'}; "
                f"{host.name if host else ''} takes {want} modules",
                {"kit_registered": kit.registered, "board_registered": registered},
                f"a {want} kit",
            )
