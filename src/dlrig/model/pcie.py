"""Host-to-device copies over PCIe (PCIE.1)."""

from __future__ import annotations

from dlrig.units import gb_s_to_bytes_s, pcie_lane_gb_s


def pcie_theoretical_gb_s(gen: int, lanes: int) -> float:
    """One direction's theoretical bandwidth of a link, GB/s (gen 3 x16: 15.75 GB/s)."""
    return pcie_lane_gb_s(gen) * lanes


def pcie_effective_gb_s(gen: int, lanes: int, efficiency: float) -> float:
    """What copies achieve: the theoretical rate times the measured efficiency for pinned
    (DMA straight from page-locked memory) or pageable (staged through a pinned buffer)
    host memory."""
    return pcie_theoretical_gb_s(gen, lanes) * efficiency


def host_copy_gb_s(gen: int, lanes: int, efficiency: float, measured_gb_s: float | None) -> float:
    """The rate host-to-device copies run at: the probe's measured rate to this card when the
    build carries one (this machine's link, NUMA placement and IOMMU all in it), else the
    link's theoretical rate times the efficiency."""
    if measured_gb_s is not None:
        return measured_gb_s
    return pcie_effective_gb_s(gen, lanes, efficiency)


def copy_time_s(n_bytes: float, rate_gb_s: float) -> float:
    """Seconds to copy n_bytes at rate_gb_s."""
    return n_bytes / gb_s_to_bytes_s(rate_gb_s)


def pcie_overlapped(pin_memory: bool, async_loading: bool) -> bool:
    """PCIE.1: a copy hides behind compute only from pinned memory with asynchronous
    loading (non-blocking copies of the next batch); otherwise the GPU waits for it."""
    return pin_memory and async_loading
