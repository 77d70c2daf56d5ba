"""A rented instance as a build the model can estimate: its GPUs on a server platform that
says how they reach each other (the offer's interconnect, and no peer-to-peer where the
provider's VM has none: `Platform.peer_to_peer`, which model/interconnect.py reads), its
vCPUs as a CPU and its RAM. What the offer does not say (storage, the CPU's clock) takes the
model's stated defaults, listed among the estimate's assumptions."""

from __future__ import annotations

import math

from dlrig.catalog.schema import CPU, Platform
from dlrig.cloud.offers import CloudOffer
from dlrig.enums import PSUEfficiency
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, Prices
from dlrig.machine.partial import resolve_spec

# Cloud vCPUs are hardware threads: two to a core on the x86 servers these instances run on.
THREADS_PER_CORE = 2
# An offer that does not say its vCPUs is given the fewest per GPU of the snapshot's instances
# that do (Azure ND96isr H100 v5: 96 vCPUs for 8 GPUs), not the model's 8 cores for a whole
# machine: a renter's data loader is then judged on a share no provider undercuts.
DEFAULT_VCPUS_PER_GPU = 12
# More GPUs than this to a server sit on two CPU sockets (every 8-GPU HGX and PCIe server of
# the platform catalog, platforms.toml, is dual-socket).
GPUS_PER_SOCKET = 4


def instance_build(offer: CloudOffer, gpus: int, electricity_per_kwh: float = 0.0) -> Build:
    """`gpus` GPUs of `offer` as one node. Electricity is the provider's (in the hourly price):
    0 by default, so the run's energy cost is not counted twice."""
    gpu = offer.gpu
    platform = resolve_spec(
        Platform,
        {
            "name": f"{offer.provider} {offer.instance}",
            "max_gpus": gpus,
            "gpu_form": gpu.form,
            "interconnect": offer.interconnect,
            "cpu_socket": "cloud",
            "cpu_sockets": 2 if gpus > GPUS_PER_SOCKET else 1,
            "memory_type": "cloud",
            "memory_slots": 32,
            "max_memory_gb": offer.ram_gb or 4096.0,
            "gpu_pcie_gen": gpu.pcie_gen,
            "gpu_pcie_lanes": 16,
            # The provider powers and cools the server: its supply never limits the cards.
            "psu_watts": 1.5 * gpus * gpu.tdp_w + 2000.0,
            "psu_efficiency": PSUEfficiency.TITANIUM,
            "peer_to_peer": offer.peer_to_peer,
        },
        f"{offer.provider} {offer.instance}",
    )
    # The instance's share of its host: vCPUs scale with the GPUs rented.
    if offer.vcpus:
        vcpus = max(1, math.floor(offer.vcpus * gpus / offer.gpus))
        cpu_name = f"{vcpus} vCPUs"
    else:
        vcpus = DEFAULT_VCPUS_PER_GPU * gpus
        cpu_name = f"{vcpus} vCPUs (assumed: {DEFAULT_VCPUS_PER_GPU} a GPU)"
    cpu = resolve_spec(
        CPU,
        {
            "name": cpu_name,
            "cores": max(1, vcpus // THREADS_PER_CORE),
            "threads": vcpus,
        },
        f"{offer.provider} {offer.instance} vCPUs",
    )
    memory = None
    if offer.ram_gb:
        memory = MemoryConfig(size_gb=offer.ram_gb * gpus / offer.gpus)
    return Build(
        name=f"{offer.provider} {offer.instance}" + (f" x{gpus}" if gpus != offer.gpus else ""),
        gpus=(GPUGroup(gpu=gpu, count=gpus),),
        cpu=cpu,
        platform=platform,
        memory=memory,
        prices=Prices(electricity_per_kwh=electricity_per_kwh),
        source=offer.source,
    )
