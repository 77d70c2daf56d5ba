"""The catalog's part schemas: one frozen, validated model per kind of part.

Field names carry their units (`memory_gb` is GiB, dlrig.units, `tdp_w` watts, `length_mm`
millimetres). Throughput figures are dense (no structured sparsity). Every part records where
its numbers came from (`sources`: field group -> URL or document) and the date of its price.
Optional fields are facts the vendor does not publish or that do not apply (`None` = unknown or
absent, never zero).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model, model_validator
from pydantic.fields import FieldInfo

from dlrig.enums import (
    CoolerType,
    FormFactor,
    Interconnect,
    LoopRole,
    PartKind,
    PSUEfficiency,
    Segment,
    StorageKind,
    Vendor,
)
from dlrig.units import (
    GBPerSecond,
    Gigahertz,
    LargeCount,
    LinkLanes,
    MBPerSecond,
    MemoryGiB,
    Millimetres,
    PCIeGen,
    PositiveSmallCount,
    PriceUSD,
    SmallCount,
    TeraBytes,
    Teraflops,
    Watts,
)

# Every field a user file can set is bounded (units.py says why); fields without a unit type of
# their own are counts of things in one machine.
PositiveFloat = Annotated[float, Field(gt=0, le=1e6)]
ClockMHz = Annotated[float, Field(gt=0, le=10_000, description="MHz")]
PositiveInt = PositiveSmallCount
NonNegativeInt = SmallCount


class PartBase(BaseModel):
    """Fields every part has: a unique name, aliases users type, a price and its provenance."""

    # Each model's validator is built when it first validates, not at import: the built-in
    # parts come from a cache (catalog/cache.py) and most commands validate no part at all.
    model_config = ConfigDict(
        frozen=True, extra="forbid", use_enum_values=False, allow_inf_nan=False, defer_build=True
    )

    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    price_usd: PriceUSD | None = Field(
        default=None, description="launch price (MSRP) or first reported price, USD"
    )
    price_date: dt.date | None = None
    street_price_usd: PriceUSD | None = Field(
        default=None,
        description="what the part sells for now (a dated listing, tracker or survey), USD; "
        "its source is `sources.street_price`",
    )
    street_price_date: dt.date | None = None
    street_market: Literal["new", "used"] | None = Field(
        default=None, description="the market the street price is from"
    )
    used_price_usd: PriceUSD | None = Field(
        default=None,
        description="what the part sells for used (a dated listing survey or report), USD, "
        "beside a new street price; its source is `sources.used_price`",
    )
    used_price_date: dt.date | None = None
    sources: dict[str, str] = Field(default_factory=dict)
    notes: str = ""
    # Fields a user's partial inline spec left out; the part holds stated defaults for them
    # (machine/partial.py), and the rules that read them report `unknown:` instead of judging.
    _unknown_fields: frozenset[str] = PrivateAttr(default_factory=frozenset)
    # How many of this part the user already has (`--own`): those cost nothing (plan/owned.py).
    _owned_count: int = PrivateAttr(default=0)

    @model_validator(mode="after")
    def _street_price_is_dated(self) -> PartBase:
        """A street price without its date and market cannot say how old or what kind it is."""
        if self.street_price_usd is not None and (
            self.street_price_date is None or self.street_market is None
        ):
            raise ValueError("street_price_usd needs street_price_date and street_market")
        if self.used_price_usd is not None and self.used_price_date is None:
            raise ValueError("used_price_usd needs used_price_date")
        return self

    # Both read the private values from their dict: through BaseModel.__getattr__ a read costs
    # ~1.8 us against ~0.07 us, and the planner and the model ask them of every part they use.
    @property
    def unknown_fields(self) -> frozenset[str]:
        """Fields whose values are stated defaults, not facts (empty for catalog parts)."""
        found: frozenset[str] = (self.__pydantic_private__ or {}).get(
            "_unknown_fields", frozenset()
        )
        return found

    @property
    def owned_count(self) -> int:
        """How many of this part the user already has (0 for catalog parts)."""
        count: int = (self.__pydantic_private__ or {}).get("_owned_count", 0)
        return count


class GPU(PartBase):
    vendor: Vendor = Vendor.NVIDIA
    segment: Segment = Segment.CONSUMER
    architecture: str = ""
    release_date: dt.date | None = None
    memory_gb: MemoryGiB
    memory_type: str = ""
    memory_bandwidth_gb_s: GBPerSecond
    l2_cache_mb: Annotated[float, Field(gt=0, le=1e4)] | None = Field(
        default=None,
        description="last-level on-chip (L2) cache, MiB as the vendor's whitepaper states it",
    )
    fp32_tflops: Teraflops
    fp16_tflops: Teraflops | None = Field(
        default=None, description="non-tensor half precision (CUDA cores / shader FP16)"
    )
    tf32_tensor_tflops: Teraflops | None = None
    fp16_tensor_tflops: Teraflops | None = Field(
        default=None, description="dense FP16 tensor rate with FP32 accumulate (training rate)"
    )
    fp16_tensor_fp16acc_tflops: Teraflops | None = Field(
        default=None, description="GeForce only: FP16 tensor rate with FP16 accumulate"
    )
    bf16_tensor_tflops: Teraflops | None = None
    fp8_tensor_tflops: Teraflops | None = None
    fp4_tensor_tflops: Teraflops | None = Field(
        default=None,
        description="dense FP4 (MXFP4/NVFP4) matrix rate where the vendor states one",
    )
    fp32_matrix_tflops: Teraflops | None = Field(
        default=None,
        description="FP32 matrix-core rate (AMD CDNA's FP32 MFMA), where FP32 GEMMs run; "
        "None where they run on the shader cores at fp32_tflops",
    )
    tdp_w: Watts
    base_clock_mhz: ClockMHz | None = Field(
        default=None,
        description="the vendor's base clock: what the card holds at its TDP under full load "
        "(NVIDIA GPU Boost); `sources.clocks`",
    )
    boost_clock_mhz: ClockMHz | None = Field(
        default=None,
        description="the vendor's boost clock, the one its peak rates are quoted at; "
        "`sources.clocks`",
    )
    sustained_clock_mhz: ClockMHz | None = Field(
        default=None,
        description="a published measurement of the clock the card holds under sustained "
        "tensor-core load at its stock power limit; `sources.sustained_clock`",
    )
    power_limit_min_w: Watts | None = Field(
        default=None,
        description="the lowest power limit the driver accepts (nvidia-smi -q 'Min Power "
        "Limit'), `sources.power_limit`; None: a third of tdp_w is assumed",
    )
    vendor_min_psu_w: Watts | None = Field(
        default=None,
        description="the vendor's required/recommended system power for a PC with one such "
        "card (NVIDIA 'Required System Power', AMD 'Recommended PSU')",
    )
    pcie_gen: PCIeGen = 4
    pcie_lanes: LinkLanes = 16
    nvlink_gb_s: GBPerSecond | None = Field(
        default=None, description="total NVLink bandwidth per GPU, both directions, GB/s"
    )
    infinity_fabric_gb_s: GBPerSecond | None = Field(
        default=None,
        description="total AMD Infinity Fabric (xGMI) peer bandwidth per GPU, both directions, "
        "GB/s, as AMD quotes it (links x per-link rate)",
    )
    infinity_fabric_links: PositiveSmallCount | None = Field(
        default=None,
        description="Infinity Fabric peer links per GPU; on an 8-module OAM board each one "
        "joins the GPU to one peer",
    )
    interconnect: Interconnect = Interconnect.PCIE
    superchip_cpu: str = Field(
        default="",
        description="the CPU a superchip joins the GPU to over NVLink-C2C ('grace': GH200, "
        "GB200), which is then the host; empty for a GPU in a host of the build's choosing",
    )
    form: FormFactor = FormFactor.PCIE
    slots: PositiveInt | None = Field(default=None, description="card width in expansion slots")
    length_mm: Millimetres | None = None
    cooler: CoolerType = CoolerType.OPEN_AIR
    power_8pin: NonNegativeInt = 0
    power_12v_2x6: NonNegativeInt = Field(default=0, description="12VHPWR / 12V-2x6 connectors")
    power_6pin: NonNegativeInt = Field(default=0, description="PCIe 6-pin connectors")
    power_eps_8pin: NonNegativeInt = Field(
        default=0,
        description="CPU/EPS12V 8-pin inputs (datacenter and some workstation cards); a desktop "
        "PSU's PCIe cables need the vendor's adapter for these",
    )

    @model_validator(mode="after")
    def _clocks_are_ordered(self) -> GPU:
        """GPU Boost runs between the base and the boost clock: a sustained clock outside them,
        or a base above the boost, is a typo."""
        base, boost = self.base_clock_mhz, self.boost_clock_mhz
        if base is not None and boost is not None and base > boost:
            raise ValueError(f"base_clock_mhz {base:g} is above boost_clock_mhz {boost:g}")
        held = self.sustained_clock_mhz
        if held is not None and boost is not None and held > boost:
            raise ValueError(f"sustained_clock_mhz {held:g} is above boost_clock_mhz {boost:g}")
        return self

    @property
    def has_tensor_cores(self) -> bool:
        return self.fp16_tensor_tflops is not None or self.bf16_tensor_tflops is not None


class CPU(PartBase):
    vendor: Vendor = Vendor.INTEL
    family: str = Field(description="core | ryzen | threadripper | threadripper-pro | epyc | ...")
    cores: LargeCount
    threads: LargeCount
    base_ghz: Gigahertz
    boost_ghz: Gigahertz | None = None
    pcie_lanes: LargeCount = Field(description="PCIe lanes from the CPU usable for devices")
    pcie_gen: PCIeGen
    memory_channels: PositiveInt
    memory_type: str
    max_memory_gb: MemoryGiB | None = None
    tdp_w: Watts
    socket: str
    release_date: dt.date | None = None


class PCIeSlot(BaseModel):
    """One x16-size slot: where it sits (expansion-slot position from the top, 1-based), how many
    lanes it is wired with, and from which PCIe generation."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    position: PositiveInt
    lanes: LinkLanes
    gen: PCIeGen
    from_cpu: bool = True


class Motherboard(PartBase):
    socket: str
    chipset: str = ""
    form_factor: str = "atx"
    memory_type: str
    memory_slots: PositiveInt
    max_memory_gb: MemoryGiB
    x16_slots: tuple[PCIeSlot, ...] = Field(max_length=16)
    m2_slots: NonNegativeInt = 0
    sockets: PositiveInt = 1
    memory_registered: bool | None = Field(
        default=None,
        description="True: registered (RDIMM) modules only; False: unbuffered only; None: unknown",
    )
    cpu_families: tuple[str, ...] = Field(
        default=(),
        description="CPU families (CPU.family) the chipset takes, where the socket alone does not "
        "decide it (LGA4677 carries Xeon W on W790 and Xeon Scalable on C741); empty: any",
    )


class PSU(PartBase):
    watts: Watts
    efficiency: PSUEfficiency = Field(description="80 PLUS tier")
    pcie_8pin: NonNegativeInt = 0
    pcie_12v_2x6: NonNegativeInt = 0
    watts_at_115v: Watts | None = Field(
        default=None,
        description="rated output on 100-120 V mains, where lower than `watts` (units rated "
        "above ~1800 W reach their rating only on 200-240 V)",
    )


class RadiatorMount(BaseModel):
    """One place a case takes a radiator, and the longest radiator it takes there."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    position: str = Field(min_length=1, max_length=40, description="front, top, bottom, side")
    max_mm: Annotated[int, Field(ge=120, le=1200)] = Field(
        description="the longest radiator that fits, mm (360: a 3 x 120 mm radiator)"
    )

    @property
    def sections(self) -> int:
        """120 mm fan positions of radiator the mount holds."""
        return self.max_mm // RADIATOR_SECTION_MM


class FanMount(BaseModel):
    """Fan positions of one size in a case (front, top, rear and bottom together)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    size_mm: Annotated[int, Field(ge=40, le=250)]
    count: Annotated[int, Field(ge=1, le=64)]


# Radiator length per fan position: 120 mm fans (EKWB rates radiators per 120 mm section).
RADIATOR_SECTION_MM = 120


class Case(PartBase):
    form_factors: tuple[str, ...] = ("atx",)
    max_gpu_length_mm: Millimetres
    expansion_slots: PositiveInt
    radiator_mounts: tuple[RadiatorMount, ...] | None = Field(
        default=None,
        max_length=16,
        description="where the case takes radiators and how long (the vendor's spec page, "
        "`sources.radiators`); None: not known",
    )
    radiator_mounts_120mm: NonNegativeInt | None = Field(
        default=None,
        description="radiator space in 120 mm fan positions, usable together (the mounts' "
        "sum when `radiator_mounts` is given); None: not known",
    )
    fan_mounts: tuple[FanMount, ...] | None = Field(
        default=None,
        max_length=8,
        description="case fan positions by size (`sources.fans`); None: not known",
    )

    @model_validator(mode="after")
    def _radiator_space(self) -> Case:
        """The 120 mm total follows from the mounts; a file giving both must agree."""
        if self.radiator_mounts is None:
            return self
        total = sum(m.sections for m in self.radiator_mounts)
        if self.radiator_mounts_120mm is None:
            object.__setattr__(self, "radiator_mounts_120mm", total)
        elif self.radiator_mounts_120mm > total:
            raise ValueError(
                f"radiator_mounts_120mm {self.radiator_mounts_120mm} exceeds the "
                f"{total} positions its radiator_mounts hold"
            )
        return self


class Storage(PartBase):
    kind: StorageKind
    interface: str = ""
    capacity_tb: TeraBytes
    read_mb_s: MBPerSecond
    write_mb_s: MBPerSecond | None = None
    random_read_iops: Annotated[float, Field(gt=0, le=1e8)] | None = Field(
        default=None,
        description="small random reads a second at a data loader's queue depth (files read "
        "in random order each cost one), with `sources.random_read`; absent: the model's "
        "figure for the drive's kind (model/pipeline.py)",
    )


class MemoryKit(PartBase):
    memory_type: str
    size_gb: MemoryGiB
    modules: PositiveInt = 1
    speed_mt_s: Annotated[int, Field(gt=0, le=100_000)] | None = None
    registered: bool = False


class Platform(PartBase):
    """A server: chassis, board, power and cooling sold as one, GPUs optionally included."""

    max_gpus: PositiveInt
    gpu_form: FormFactor
    interconnect: Interconnect
    included_gpu: str | None = Field(default=None, description="catalog GPU name if bundled")
    included_gpu_count: NonNegativeInt = 0
    cpu_socket: str
    cpu_sockets: PositiveInt = 2
    cpu_families: tuple[str, ...] = Field(
        default=(),
        description="CPU families the platform takes where the socket does not decide it "
        "(a dual-socket LGA4677 server takes Xeon Scalable, not Xeon W); empty: any",
    )
    included_cpu: str | None = None
    memory_type: str
    memory_slots: PositiveInt
    max_memory_gb: MemoryGiB
    gpu_pcie_gen: PCIeGen = 4
    gpu_pcie_lanes: LinkLanes = 16
    psu_watts: Watts
    psu_efficiency: PSUEfficiency = PSUEfficiency.TITANIUM
    drive_bays: Annotated[int, Field(ge=0, le=4096)] = 0
    network_gbit_s: GBPerSecond | None = None
    rack_units: PositiveInt | None = None
    memory_registered: bool | None = Field(
        default=None, description="True: registered (RDIMM/LRDIMM) modules only"
    )
    gpu_max_slots: PositiveInt | None = Field(
        default=None, description="widest PCIe card (in expansion slots) each GPU position takes"
    )
    peer_to_peer: bool = Field(
        default=True,
        description="False where the GPUs reach each other only through host memory: a cloud "
        "instance whose PCIe GPUs are passed through to a virtual machine",
    )


class LoopPart(PartBase):
    """A part of a custom water loop: a GPU block, a pump with its reservoir, a radiator, or
    the fittings, tubing and coolant of one loop."""

    role: LoopRole
    fits_gpus: tuple[str, ...] = Field(
        default=(),
        description="catalog GPU names a block fits (the PCB it is cut for); gpu-block only",
    )
    slots: PositiveInt | None = Field(
        default=None, description="a block's width with its I/O bracket, expansion slots"
    )
    radiator_mm: Literal[120, 240, 360, 480] | None = Field(
        default=None, description="a radiator's length: 120 mm per fan position"
    )
    watts: Watts | None = Field(default=None, description="what the part draws (a pump)")

    @model_validator(mode="after")
    def _role_fields(self) -> LoopPart:
        """A radiator says its length; a block says what it fits."""
        if self.role is LoopRole.RADIATOR and self.radiator_mm is None:
            raise ValueError("a radiator needs radiator_mm (120, 240, 360 or 480)")
        if self.role is LoopRole.GPU_BLOCK and not self.fits_gpus:
            raise ValueError("a gpu-block needs fits_gpus (the GPUs it is cut for)")
        return self

    @property
    def sections(self) -> int:
        """120 mm fan positions of radiator (0 for other parts)."""
        return (self.radiator_mm or 0) // RADIATOR_SECTION_MM


PART_MODELS: dict[PartKind, type[PartBase]] = {
    PartKind.GPUS: GPU,
    PartKind.CPUS: CPU,
    PartKind.MOTHERBOARDS: Motherboard,
    PartKind.PSUS: PSU,
    PartKind.CASES: Case,
    PartKind.STORAGE: Storage,
    PartKind.MEMORY: MemoryKit,
    PartKind.PLATFORMS: Platform,
    PartKind.COOLING: LoopPart,
}
# Every kind has its model (a new kind must say how its parts look).
assert set(PART_MODELS) == set(PartKind)


def optional_fields_model(
    part_model: type[PartBase], name: str, doc: str, *, default_name: str | None = None
) -> type[BaseModel]:
    """A model with part_model's fields, each optional: what a user writes to patch a catalog
    part (`--catalog`) or to describe a part in part (an inline spec). `name` stays required
    unless default_name is given."""
    fields: dict[str, Any] = {}
    for field_name, info in part_model.model_fields.items():
        if field_name == "name":
            fields["name"] = (
                str,
                Field(min_length=1, description="the part's name")
                if default_name is None
                else Field(default=default_name, min_length=1, description="the part's name"),
            )
        elif info.is_required():
            optional_type: Any = info.annotation | None  # type: ignore[operator]
            fields[field_name] = (optional_type, FieldInfo.merge_field_infos(info, default=None))
        else:
            fields[field_name] = (info.annotation, info)
    model: type[BaseModel] = create_model(
        name,
        __config__=ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True),
        __doc__=doc,
        **fields,
    )
    return model


def catalog_file_model() -> type[BaseModel]:
    """The grammar of a `--catalog FILE`: one list per kind; an entry whose name is in the
    catalog patches that part (any fields), any other entry adds a part (schema.py's fields)."""
    kinds: dict[str, Any] = {}
    for kind, part_model in PART_MODELS.items():
        entry = optional_fields_model(
            part_model, f"{part_model.__name__}Entry", f"A {part_model.__name__} to add or patch."
        )
        kinds[kind] = (list.__class_getitem__(entry), Field(default_factory=list))
    model: type[BaseModel] = create_model(
        "CatalogFile",
        __config__=ConfigDict(extra="forbid", defer_build=True),
        __doc__="A user's catalog file: parts to add to dlrig's catalog or to patch in it.",
        **kinds,
    )
    return model
