"""Closed sets of the domain, one enum each."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Vendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    OTHER = "other"


class Segment(StrEnum):
    CONSUMER = "consumer"
    WORKSTATION = "workstation"
    DATACENTER = "datacenter"


class CoolerType(StrEnum):
    BLOWER = "blower"
    OPEN_AIR = "open-air"
    PASSIVE = "passive"
    WATER = "water"


class FormFactor(StrEnum):
    """How a GPU attaches: a PCIe add-in card, an NVIDIA SXM module, or an OCP OAM module."""

    PCIE = "pcie"
    SXM = "sxm"
    OAM = "oam"


class Precision(StrEnum):
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"


class Interconnect(StrEnum):
    """How GPUs inside a node exchange gradients."""

    PCIE = "pcie"
    NVLINK_BRIDGE = "nvlink-bridge"
    NVLINK = "nvlink"
    NVSWITCH = "nvswitch"
    INFINITY_FABRIC = "infinity-fabric"


class StorageKind(StrEnum):
    HDD = "hdd"
    SATA_SSD = "sata-ssd"
    NVME = "nvme"


class NetworkKind(StrEnum):
    ETHERNET = "ethernet"
    INFINIBAND = "infiniband"
    ROCE = "roce"


class Bottleneck(StrEnum):
    """The one vocabulary of stages shared by estimate, probe, watch and dlrig.torch."""

    STORAGE = "storage"
    CPU_PREPROCESSING = "cpu_preprocessing"
    PCIE = "pcie"
    GPU_COMPUTE = "gpu_compute"
    GPU_MEMORY_BANDWIDTH = "gpu_memory_bandwidth"
    INTERCONNECT = "interconnect"
    NETWORK = "network"


class Modifier(StrEnum):
    """Conditions that slow a stage; reported beside it, never as stages."""

    THERMAL_THROTTLE = "thermal_throttle"
    POWER_CAP = "power_cap"
    PCIE_DOWNGRADED = "pcie_downgraded"


class PreprocessingStrategy(StrEnum):
    """CPU.1: preprocess each mini-batch while training, or once before."""

    ONLINE = "online"
    OFFLINE = "offline"


class Optimizer(StrEnum):
    SGD = "sgd"
    ADAM = "adam"
    ADAMW = "adamw"
    # AdamW with both moments in 8 bits (bitsandbytes AdamW8bit / PagedAdamW8bit, torchao
    # AdamW8bit; dlrig.model.memory.EIGHT_BIT_STATE_BYTES).
    ADAMW_8BIT = "adamw8bit"


class Parallelism(StrEnum):
    DDP = "ddp"
    FSDP = "fsdp"
    HOST_PS = "host-ps"


class PSUEfficiency(StrEnum):
    """80 PLUS certification tiers, lowest first (PSU.3)."""

    WHITE = "white"
    BRONZE = "bronze"
    SILVER = "silver"
    GOLD = "gold"
    PLATINUM = "platinum"
    TITANIUM = "titanium"


class PartKind(StrEnum):
    """The kinds of part, named as the catalog's lists are (`--catalog` file keys)."""

    GPUS = "gpus"
    CPUS = "cpus"
    MOTHERBOARDS = "motherboards"
    PSUS = "psus"
    CASES = "cases"
    STORAGE = "storage"
    MEMORY = "memory"
    PLATFORMS = "platforms"
    COOLING = "cooling"


class LoopRole(StrEnum):
    """What a custom water loop's part does."""

    GPU_BLOCK = "gpu-block"
    PUMP = "pump-reservoir"
    RADIATOR = "radiator"
    FITTINGS = "fittings"
