"""dlrig.plan.upgrade on the fake catalog with the toy model and rules (plan_fakes.py)."""

from __future__ import annotations

from plan_fakes import FAKE_WORKLOADS, FakeEvaluator, fake_catalog

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import CPU, GPU, PSU, Case, Motherboard, PCIeSlot, Storage
from dlrig.enums import Bottleneck
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, StorageDevice
from dlrig.plan.upgrade import upgrade

CATALOG = fake_catalog()


def part(kind: type, name: str, catalog: Catalog = CATALOG) -> object:
    return catalog.find(kind, name)


def desk_build(gpu: str = "Small 12", count: int = 1, drive: str = "Disk 4TB") -> Build:
    board = CATALOG.find(Motherboard, "Desk board")
    return Build(
        name="desk",
        gpus=(GPUGroup(gpu=CATALOG.find(GPU, gpu), count=count),),
        cpu=CATALOG.find(CPU, "Desk 8"),
        motherboard=board,
        memory=MemoryConfig(size_gb=32, memory_type="ddr5"),
        storage=(StorageDevice(device=CATALOG.find(Storage, drive)),),
        psu=CATALOG.find(PSU, "PSU 850"),
        case=CATALOG.find(Case, "Mid tower"),
    )


def test_gpu_swap_ranks_above_ram_for_a_gpu_compute_bound_job() -> None:
    # Toy model: 1x Small 12 on "vision" is 10 TFLOPS / 0.03 TFLOP = 333 samples/s, under the
    # CPU's 8 x 1000 / 4 ms = 2000 and the disk's 180 MB/s / 110 kB = 1636: gpu_compute-bound.
    result = upgrade(desk_build(), FAKE_WORKLOADS["vision"], 5000, CATALOG, FakeEvaluator())
    assert result.current.bottleneck is Bottleneck.GPU_COMPUTE
    summaries = [c.summary for c in result.changes]
    assert summaries, result.verdict
    assert result.changes[0].steps[0].startswith(("swap GPUs", "add 1x Small 12"))
    # More RAM does not raise the GPU stage, so it is not offered as helping at all.
    assert not any(s.startswith("RAM") for s in summaries)
    gains = [c.gain_per_1000_usd for c in result.changes]
    assert gains == sorted(gains, reverse=True)


def test_swap_to_a_hungrier_gpu_forces_a_bigger_psu() -> None:
    # 2x Fast 24 (450 W each) + an 8-core 105 W CPU: PSU.1 asks (900 + 105 + 90) x 1.1 =
    # 1204.5 W -> 1300 W, more than the PSU 850, so the change adds the PSU 1600.
    result = upgrade(desk_build(count=2), FAKE_WORKLOADS["vision"], 9000, CATALOG, FakeEvaluator())
    swap = next(c for c in result.changes if c.steps[0] == "swap GPUs -> 2x Fast 24")
    assert swap.steps[1].startswith("PSU -> PSU 1600")
    assert swap.price_usd == 2 * 1600 + 400


def test_storage_bound_job_gets_nvme_first() -> None:
    # DISK.3: 2 MB samples from a 180 MB/s disk feed 90 samples/s; the NVMe (7000 MB/s) 3500.
    result = upgrade(desk_build(), FAKE_WORKLOADS["disk-heavy"], 1000, CATALOG, FakeEvaluator())
    assert result.current.bottleneck is Bottleneck.STORAGE
    assert "NVMe 2TB" in result.changes[0].summary
    assert "DISK.3" in result.changes[0].summary


def test_no_change_helps_on_the_best_gpu_the_board_takes() -> None:
    one_slot = CATALOG.find(Motherboard, "Desk board").model_copy(
        update={"x16_slots": (PCIeSlot(position=1, lanes=16, gen=4),)}
    )
    catalog = Catalog({**CATALOG.parts, "motherboards": (one_slot,)})
    build = Build(
        name="maxed",
        gpus=(GPUGroup(gpu=catalog.find(GPU, "Fast 24")),),
        cpu=catalog.find(CPU, "Desk 16"),
        motherboard=one_slot,
        memory=MemoryConfig(size_gb=64, memory_type="ddr5"),
        storage=(StorageDevice(device=catalog.find(Storage, "NVMe 2TB")),),
        psu=catalog.find(PSU, "PSU 1600"),
        case=catalog.find(Case, "Full tower"),
    )
    result = upgrade(build, FAKE_WORKLOADS["vision"], 100_000, catalog, FakeEvaluator())
    assert result.changes == ()
    assert result.verdict == (
        "No change under this budget helps, because the job is gpu_compute-bound "
        "on the best GPU the board takes"
    )


def test_nothing_affordable_names_the_cheapest_change_that_helps() -> None:
    result = upgrade(desk_build(), FAKE_WORKLOADS["vision"], 50, CATALOG, FakeEvaluator())
    assert result.changes == ()
    assert result.verdict.startswith(
        "No change under 50 USD helps, because the job is gpu_compute-bound and the cheapest "
        "change that helps"
    )


def test_a_job_that_does_not_fit_asks_for_memory_first() -> None:
    # "big-model" needs 30 GB per GPU (plan_fakes); the 12 GB card cannot hold it, the 48 GB
    # Blower 48 (4000 USD) is the cheapest card that can.
    result = upgrade(desk_build(), FAKE_WORKLOADS["big-model"], 100, CATALOG, FakeEvaluator())
    assert result.changes == ()
    assert result.verdict == (
        "No change under 100 USD helps: the job does not fit in 12 GiB per GPU (it needs "
        "30.0 GiB); the cheapest change that makes it fit (swap GPUs -> 1x Blower 48 + RAM -> "
        "1x DDR5 2x32 (RAM.2: >= 48 GiB)) costs 4,180 USD"
    )
