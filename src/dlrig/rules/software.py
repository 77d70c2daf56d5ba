"""Software rules: what a GPU can run for the job beyond its datasheet (catalog/software.py):
ROCm's support for AMD GPUs (SW.rocm), RCCL's slot needs for several Radeon cards (SW.rccl),
bitsandbytes for QLoRA and 8-bit optimizers (SW.bnb) and FlashAttention-2 (SW.flash) on ROCm,
each by version and date."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dlrig.enums import Optimizer
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts

if TYPE_CHECKING:
    from dlrig.catalog.software import RocmGpu, SoftwareTable
    from dlrig.workloads.model import Workload

# SW.rccl: ROCm 5.7 "Radeon multi-GPU" limitations (rocm.docs.amd.com/projects/radeon-ryzen/en/
# docs-5.7.0/docs/limitations.html): "Only use PCIe slots connected by the CPU ... avoid PCIe
# slots connected via chipset", slots of identical lane width, PCIe 3.0 atomics; a HIP error with
# 2x RX 7900 XTX when one card sits in a chipset slot. RCCL >= 2.27.7-b43 collectives die with
# hipErrorIllegalState where PCIe AtomicOps cannot reach the GPU (chipset slots), reproduced on
# 2x RX 7900 XTX on B550 (cadamcat/dual-radeon-vllm README @06820c5, measured 2026-07/08;
# ROCm issue 6520).
RCCL_SOURCE = "ROCm Radeon multi-GPU limitations (5.7); RCCL hipErrorIllegalState, ROCm#6520"


def _amd_rows(f: Facts) -> list[tuple[str, RocmGpu | None]]:
    """(name, ROCm row) of each distinct AMD GPU model of the build, in build order (the
    table is read only for a build with one)."""
    names = dict.fromkeys(c.gpu.name for c in f.cards if c.gpu.vendor == "amd")
    if not names:
        return []
    table = software_table()
    return [(name, table.rocm(name)) for name in names]


def software_table() -> SoftwareTable:
    """The ROCm table, read when a build has an AMD GPU (most checks never import it)."""
    from dlrig.catalog.software import software_table as table

    return table()


def _listed(row: RocmGpu, table: SoftwareTable) -> str:
    since = f", listed since {row.listed_since.isoformat()}" if row.listed_since else ""
    return f"{row.llvm_target}, {row.rocm_linux} on AMD's ROCm Linux list{since}; read {table.read}"


@rule("SW.rocm")
def rocm_support(f: Facts) -> Iterator[Judgement]:
    """An AMD GPU trains with PyTorch on ROCm, and only the GPUs on AMD's ROCm support table are
    supported: "If a GPU is not listed on this table, it's not officially supported by AMD"."""
    rows = _amd_rows(f)
    if not rows:
        return
    table = software_table()
    for name, row in rows:
        if row is None:
            yield unknown(
                f"ROCm support for {name}",
                f"dlrig's ROCm table (read {table.read}) has no row for it",
                "check AMD's ROCm system requirements for the card",
            )
            continue
        evidence = {
            "gpu": name,
            "llvm_target": row.llvm_target,
            "rocm_linux": row.rocm_linux,
            "listed_since": row.listed_since.isoformat() if row.listed_since else None,
            "source": row.source,
        }
        if row.rocm_linux == "supported":
            yield info(f"{name} runs on ROCm ({_listed(row, table)})", evidence)
        elif row.rocm_linux == "deprecated":
            yield warning(
                f"{name} is deprecated in ROCm ({_listed(row, table)}): support will be removed",
                evidence,
                "a GPU ROCm supports, or an NVIDIA GPU (CUDA)",
            )
        else:
            yield error(
                f"{name} is not supported by ROCm ({_listed(row, table)}): PyTorch does not "
                "train on it",
                evidence,
                "a GPU ROCm supports, or an NVIDIA GPU (CUDA)",
            )


@rule(
    "SW.rccl",
    reads=(
        "motherboard.x16_slots",
        "cpu.pcie_lanes",
        "cpu.pcie_gen",
    ),
    bar=True,
)
def radeon_slots(f: Facts) -> Iterator[Judgement]:
    """Several Radeon cards need CPU-attached slots of equal width with PCIe atomics: ROCm's
    Radeon multi-GPU support says avoid chipset slots, and RCCL's collectives fail there."""
    radeon = [
        i
        for i, c in enumerate(f.cards)
        if c.gpu.vendor == "amd"
        and (row := software_table().rocm(c.gpu.name)) is not None
        and row.radeon
    ]
    if len(radeon) < 2:
        return
    links = f.links
    placement = f.placement
    if links is None or (placement is None and f.desktop):
        yield unknown(
            f"whether {len(radeon)} Radeon cards sit in CPU-attached slots",
            "no motherboard or platform given",
        )
        return
    chipset = sorted(s.card for s in (placement.seats if placement else ()) if not s.slot.from_cpu)
    on_chipset = [i for i in chipset if i in radeon]
    widths = sorted({links[i].lanes for i in radeon if links[i].lanes > 0})
    evidence = {
        "radeon_gpus": len(radeon),
        "chipset_gpus": on_chipset,
        "lanes": [links[i].lanes for i in radeon],
        "source": RCCL_SOURCE,
    }
    if on_chipset:
        yield error(
            f"{len(on_chipset)} of {len(radeon)} Radeon cards sit in chipset-wired slots: ROCm "
            "supports Radeon multi-GPU only on CPU-attached slots, and RCCL's collectives fail "
            "there (hipErrorIllegalState: PCIe atomics do not reach the card)",
            evidence,
            "a board or platform that wires every GPU slot to the CPU (x8/x8 or better)",
        )
    elif len(widths) > 1:
        shown = "/".join(f"x{w}" for w in widths)
        yield warning(
            f"the Radeon cards run at {shown}: ROCm's Radeon multi-GPU support asks for slots "
            "of identical width",
            evidence,
            "CPU-attached slots of one width for every Radeon card",
        )
    else:
        yield info(
            f"{len(radeon)} Radeon cards on CPU-attached x{widths[0] if widths else '?'} slots "
            "of one width, as ROCm's Radeon multi-GPU support and RCCL need",
            evidence,
        )


def needs_bitsandbytes(w: Workload) -> str | None:
    """What of the job needs bitsandbytes (None: nothing)."""
    from dlrig.workloads.model import FinetuneMethod  # loaded with the workload

    if w.finetune is FinetuneMethod.QLORA:
        return "QLoRA's 4-bit base weights"
    if w.paged_optimizer:
        return "the paged optimizer"
    if w.optimizer is Optimizer.ADAMW_8BIT:
        return "the 8-bit AdamW"
    return None


@rule("SW.bnb", bar=True)
def bitsandbytes_on_rocm(f: Facts) -> Iterator[Judgement]:
    """QLoRA and the 8-bit optimizers run on bitsandbytes; on ROCm it was an alpha for a few
    Instinct and RDNA 3 targets from 2024-09 and supports RDNA and CDNA fully from 2025-12-11."""
    w = f.workload
    if w is None or w.serve is not None:
        return
    need = needs_bitsandbytes(w)
    if need is None:
        return
    table = software_table()
    bnb = table.library("bitsandbytes")
    for name, row in _amd_rows(f):
        if row is None:
            continue  # SW.rocm says it has no row
        status = bnb.status(row.llvm_target, table.read)
        first = bnb.first(row.llvm_target)
        evidence = {
            "gpu": name,
            "llvm_target": row.llvm_target,
            "level": status.level if status else None,
            "since": status.since.isoformat() if status else None,
            "source": status.source if status else None,
        }
        if status is None:
            # Not a confirmed "unsupported": the docs name the targets their ROCm wheels are
            # built for, and this is not among them; a plan does not rest a job on it.
            yield warning(
                f"{need} need bitsandbytes, whose ROCm docs (read to {table.read}) do not name "
                f"{name}'s {row.llvm_target} among the targets they build for: it may not run",
                evidence,
                "an NVIDIA GPU (CUDA), or an AMD GPU bitsandbytes builds for (RDNA 3/4, MI200, "
                "MI300)",
            )
        elif status.level == "alpha":
            yield warning(
                f"{need} need bitsandbytes, whose ROCm backend for {row.llvm_target} ({name}) is "
                f"an alpha (since {status.since.isoformat()})",
                evidence,
                "an NVIDIA GPU (CUDA), or expect to build and debug bitsandbytes on ROCm",
            )
        else:
            alpha = (
                f"; an alpha from {first.since.isoformat()}"
                if first is not None and first.level == "alpha"
                else ""
            )
            yield info(
                f"{need} run on bitsandbytes, which supports {name} ({row.llvm_target}) on "
                f"ROCm (Linux) since {status.since.isoformat()}{alpha}",
                evidence,
            )


@rule("SW.flash")
def flash_attention_on_rocm(f: Facts) -> Iterator[Judgement]:
    """Fused attention on ROCm: PyTorch's default ROCm build runs RDNA's attention eager (the
    estimate counts it so); FlashAttention-2 covers MI200/MI300 from 2024-07 and RDNA 3/4 from
    2026."""
    w = f.workload
    if w is None or w.serve is not None or not w.flash_attention:
        return
    table = software_table()
    fa = table.library("FlashAttention-2")
    for name, row in _amd_rows(f):
        if row is None:
            continue
        status = fa.status(row.llvm_target, table.read)
        first_supported = fa.supported_since(row.llvm_target)
        evidence = {
            "gpu": name,
            "llvm_target": row.llvm_target,
            "since": first_supported.isoformat() if first_supported else None,
            "source": status.source if status else None,
        }
        if status is None:
            yield unknown(
                f"FlashAttention-2 on {name} ({row.llvm_target})",
                f"its README (read to {table.read}) does not name {row.llvm_target}",
            )
            continue
        since = first_supported or status.since
        yield info(
            f"FlashAttention-2 runs on {name} ({row.llvm_target}) since "
            f"{since.isoformat()} (flash-attn's ROCm "
            "backends); the estimate follows PyTorch's own SDPA in its default ROCm build",
            evidence,
        )
