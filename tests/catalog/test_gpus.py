"""The built-in GPU catalog (catalog/data/gpus.toml): it loads and validates, covers the GPUs a
deep-learning builder asks about, every number has a source, lookups find the intended part,
datasheet figures are what the vendors publish, and the fields agree with each other."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.loader import normalize
from dlrig.catalog.schema import GPU
from dlrig.enums import CoolerType, FormFactor, Interconnect, Segment, Vendor
from dlrig.errors import UnknownPartError

CATALOG = load_catalog()
GPUS = CATALOG.gpus

# Laptop GPUs (Lambda's 2022 benchmark ran on them). They are not add-in cards: no slots, no
# card length, no auxiliary power connectors (the laptop's regulators feed them), and no price of
# their own (sold only inside laptops). Their clocks depend on the laptop's TGP, so each records
# one TGP configuration and says which in its notes. Tests below exempt them by name from the
# add-in-card checks and check what holds for them instead.
MOBILE = {
    "GeForce RTX 3080 Laptop GPU",
    "GeForce RTX 2080 Super Max-Q",
    "GeForce RTX 2080 Max-Q",
    "GeForce RTX 2070 Max-Q",
}

# Workstation cards whose list price could not be found (2026-12-02): NVIDIA published none and
# the reported figures disagree or are absent (see each entry's price source).
UNPRICED_WORKSTATION = {"NVIDIA RTX A4500", "NVIDIA RTX A5500"}

# Parts with no public list price and no reported price found (2026-12-02): datacenter parts,
# the workstation cards above and the laptop GPUs. Their notes say "price unknown"; a test below
# keeps this list and the data in step.
UNPRICED = (
    {
        "A100 PCIe 40GB",
        "A100 PCIe 80GB",
        "NVIDIA L40",
        "H100 NVL 94GB",
        "H200 NVL 141GB",
        "AMD Instinct MI210",
        "AMD Instinct MI325X",
        "GH200 96GB",
        "GH200 144GB",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "GB200 186GB",
        "AMD Instinct MI355X",
        "AMD Instinct MI250",
    }
    | UNPRICED_WORKSTATION
    | MOBILE
)

URL = re.compile(r"https?://[^\s;()]+")


def gpu(name: str) -> GPU:
    return CATALOG.find(GPU, name)


# --- loading and coverage --------------------------------------------------------------------


def test_catalog_has_at_least_42_gpus() -> None:
    # issue #2 asks for 40; the GPU brief for 42
    assert len(GPUS) >= 42


def test_every_segment_has_nvidia_and_amd_parts() -> None:
    pairs = {(g.segment, g.vendor) for g in GPUS}
    for segment in Segment:
        assert (segment, Vendor.NVIDIA) in pairs
        assert (segment, Vendor.AMD) in pairs


def test_release_dates_span_2017_to_2025_and_stay_in_range() -> None:
    dates = [g.release_date for g in GPUS]
    assert all(d is not None for d in dates)
    years = {d.year for d in dates if d is not None}
    assert min(years) == 2017
    assert max(years) >= 2025
    assert all(2017 <= y <= 2026 for y in years)


REQUIRED = [
    ("GTX 1080 Ti", "GeForce GTX 1080 Ti"),
    ("RTX 2080 Ti", "GeForce RTX 2080 Ti"),
    ("Titan RTX", "NVIDIA TITAN RTX"),
    ("Titan V", "NVIDIA TITAN V"),
    ("RTX 3080", "GeForce RTX 3080"),
    ("RTX 3090", "GeForce RTX 3090"),
    ("RTX 4080", "GeForce RTX 4080"),
    ("RTX 4090", "GeForce RTX 4090"),
    ("RTX 5080", "GeForce RTX 5080"),
    ("RTX 5090", "GeForce RTX 5090"),
    ("RTX A4000", "NVIDIA RTX A4000"),
    ("RTX A5000", "NVIDIA RTX A5000"),
    ("RTX A6000", "NVIDIA RTX A6000"),
    ("RTX 4000 Ada", "NVIDIA RTX 4000 Ada Generation"),
    ("RTX 5000 Ada", "NVIDIA RTX 5000 Ada Generation"),
    ("RTX 6000 Ada", "NVIDIA RTX 6000 Ada Generation"),
    ("RTX PRO 6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
    ("RTX PRO 6000 Max-Q", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
    ("V100 PCIe 16GB", "Tesla V100 PCIe 16GB"),
    ("V100 PCIe 32GB", "Tesla V100 PCIe 32GB"),
    ("V100 SXM2 16GB", "Tesla V100 SXM2 16GB"),
    ("V100 SXM2 32GB", "Tesla V100 SXM2 32GB"),
    ("T4", "NVIDIA T4"),
    ("A10", "NVIDIA A10"),
    ("A30", "NVIDIA A30"),
    ("A40", "NVIDIA A40"),
    ("L4", "NVIDIA L4"),
    ("L40", "NVIDIA L40"),
    ("L40S", "NVIDIA L40S"),
    ("A100 40GB PCIe", "A100 PCIe 40GB"),
    ("A100 80GB PCIe", "A100 PCIe 80GB"),
    ("A100 40GB SXM", "A100 SXM4 40GB"),
    ("A100 80GB SXM", "A100 SXM4 80GB"),
    ("H100 PCIe", "H100 PCIe 80GB"),
    ("H100 SXM", "H100 SXM5 80GB"),
    ("H100 NVL", "H100 NVL 94GB"),
    ("H200 SXM", "H200 SXM 141GB"),
    ("H200 NVL", "H200 NVL 141GB"),
    ("B200", "B200 SXM 180GB"),
    ("B300", "B300 SXM 288GB"),
    ("MI100", "AMD Instinct MI100"),
    ("MI210", "AMD Instinct MI210"),
    ("MI250", "AMD Instinct MI250"),
    ("MI250X", "AMD Instinct MI250X"),
    ("MI300X", "AMD Instinct MI300X"),
    ("MI325X", "AMD Instinct MI325X"),
    ("MI355X", "AMD Instinct MI355X"),
    ("W7900", "AMD Radeon PRO W7900"),
    ("RX 7900 XTX", "AMD Radeon RX 7900 XTX"),
]


@pytest.mark.parametrize(("query", "name"), REQUIRED)
def test_required_gpu_is_in_the_catalog(query: str, name: str) -> None:
    assert gpu(query).name == name


# --- provenance ------------------------------------------------------------------------------


def test_every_gpu_has_sources_with_at_least_one_valid_url() -> None:
    for g in GPUS:
        assert g.sources, g.name
        urls = [u for value in g.sources.values() for u in URL.findall(value)]
        assert urls, f"{g.name}: no URL among its sources"
        for url in urls:
            parsed = urlparse(url)
            assert parsed.scheme in {"http", "https"} and "." in parsed.netloc, (g.name, url)
        for key, value in g.sources.items():
            # a URL, or a named document ("NVIDIA T4 datasheet", "Epoch AI, ...")
            assert URL.search(value) or len(value.split()) >= 3, (g.name, key, value)


def test_epoch_figures_are_credited_by_name() -> None:
    # Epoch AI's data is CC BY 4.0: its figures must be credited as "Epoch AI, Machine Learning
    # Hardware" (the licence's attribution, epoch.ai/data/machine-learning-hardware)
    for g in GPUS:
        for value in g.sources.values():
            if "epoch" in value.lower():
                assert "Epoch AI, Machine Learning Hardware" in value, g.name


def test_every_priced_gpu_has_a_price_date_and_source() -> None:
    for g in GPUS:
        if g.name in UNPRICED:
            continue
        assert g.price_usd is not None, g.name
        assert g.price_date is not None, g.name
        assert "price" in g.sources, g.name


def test_unpriced_gpus_say_so_and_the_list_matches_the_data() -> None:
    unpriced = {g.name for g in GPUS if g.price_usd is None}
    assert unpriced == UNPRICED
    for g in GPUS:
        if g.name in UNPRICED:
            assert g.price_date is None
            assert "price unknown" in g.notes, g.name


def test_all_consumer_and_workstation_cards_have_a_price() -> None:
    # launch MSRPs are public for the consumer and workstation cards in the catalog, except the
    # two workstation cards named in UNPRICED_WORKSTATION; laptop GPUs are not sold alone
    for g in GPUS:
        if g.segment is not Segment.DATACENTER and g.name not in UNPRICED_WORKSTATION | MOBILE:
            assert g.price_usd is not None, g.name


def test_price_dates_are_not_before_release() -> None:
    for g in GPUS:
        if g.price_date is not None and g.release_date is not None:
            assert g.price_date >= g.release_date, g.name
            assert g.price_date <= dt.date(2026, 12, 31), g.name


# --- names and lookup ------------------------------------------------------------------------


def test_names_and_aliases_are_unique_after_normalization() -> None:
    owner: dict[str, str] = {}
    for g in GPUS:
        labels = {normalize(label) for label in (g.name, *g.aliases)}
        for label in labels:
            assert label, g.name
            assert label not in owner, f"'{label}' is used by {owner.get(label)} and {g.name}"
            owner[label] = g.name


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("4090", "GeForce RTX 4090"),
        ("RTX 4090", "GeForce RTX 4090"),
        ("geforce rtx-4090", "GeForce RTX 4090"),
        ("h100 sxm", "H100 SXM5 80GB"),
        ("H100-SXM5", "H100 SXM5 80GB"),
        ("h200", "H200 SXM 141GB"),
        ("V100 SXM2", "Tesla V100 SXM2 32GB"),
        ("1080ti", "GeForce GTX 1080 Ti"),
        ("a100 sxm", "A100 SXM4 80GB"),
        ("mi300x", "AMD Instinct MI300X"),
        ("pro 6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
        ("6000 ada", "NVIDIA RTX 6000 Ada Generation"),
        ("7900 xtx", "AMD Radeon RX 7900 XTX"),
    ],
)
def test_lookup_resolves_to_the_intended_part(query: str, name: str) -> None:
    assert gpu(query).name == name


@pytest.mark.parametrize(
    ("nvml_name", "name"),
    [
        # device names as NVML / nvidia-smi report them, so `dlrig probe` can map a machine's
        # GPUs to catalog parts
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
        ("Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"),
        ("Tesla V100-PCIE-16GB", "Tesla V100 PCIe 16GB"),
        ("Tesla T4", "NVIDIA T4"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
        ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
        ("NVIDIA H100 NVL", "H100 NVL 94GB"),
        ("NVIDIA H200", "H200 SXM 141GB"),
        ("NVIDIA RTX A6000", "NVIDIA RTX A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"),
        ("NVIDIA L40S", "NVIDIA L40S"),
    ],
)
def test_nvml_device_names_resolve(nvml_name: str, name: str) -> None:
    assert gpu(nvml_name).name == name


@pytest.mark.parametrize("query", ["V100", "A100", "H100", "RTX 6000"])
def test_ambiguous_family_name_is_refused_with_closest_names(query: str) -> None:
    # several variants differ in memory and interconnect (or, for "RTX 6000", in generation:
    # Quadro RTX 6000 on Turing, RTX 6000 Ada): never pick one silently
    with pytest.raises(UnknownPartError) as info:
        gpu(query)
    assert info.value.hint is not None
    assert query in info.value.hint


# --- datasheet spot checks -------------------------------------------------------------------


def test_rtx_4090_matches_ada_whitepaper() -> None:
    # NVIDIA Ada GPU Architecture whitepaper, appendix (GeForce RTX 4090): 24 GB GDDR6X,
    # 1008 GB/s, 82.6 FP32 TFLOPS, 165.2 FP16 tensor TFLOPS with FP32 accumulate (330.3 with
    # FP16 accumulate), 450 W; Founders Edition: 3 slots, one 16-pin 12VHPWR
    g = gpu("RTX 4090")
    assert g.memory_gb == 24
    assert g.memory_bandwidth_gb_s == 1008
    assert g.fp32_tflops == 82.6
    assert g.fp16_tensor_tflops == 165.2
    assert g.fp16_tensor_fp16acc_tflops == 330.3
    assert g.tdp_w == 450
    assert g.power_12v_2x6 == 1
    assert g.power_8pin == 0
    assert g.slots == 3
    assert g.cooler is CoolerType.OPEN_AIR


def test_h100_sxm_matches_h100_datasheet() -> None:
    # NVIDIA H100 Tensor Core GPU datasheet, SXM column: 80 GB, 3.35 TB/s, BF16 1979 TFLOPS
    # with sparsity (989.5 dense), FP8 3958 with sparsity (1979 dense), up to 700 W, NVLink
    # 900 GB/s
    g = gpu("H100 SXM")
    assert g.memory_gb == 80
    assert g.memory_bandwidth_gb_s == 3350
    assert g.bf16_tensor_tflops == pytest.approx(989, abs=1)
    assert g.fp8_tensor_tflops == 1979
    assert g.tdp_w == 700
    assert g.nvlink_gb_s == 900
    assert g.interconnect is Interconnect.NVSWITCH
    assert g.form is FormFactor.SXM


def test_gtx_1080_ti_has_no_tensor_cores_and_a_blower() -> None:
    # NVIDIA GTX 1080 Ti specifications: 11 GB, 484 GB/s, 250 W; Founders Edition radial
    # blower, one 8-pin + one 6-pin; Pascal GP102 has no tensor cores and 1/64-rate FP16
    g = gpu("1080 Ti")
    assert not g.has_tensor_cores
    assert g.cooler is CoolerType.BLOWER
    assert g.tdp_w == 250
    assert g.memory_bandwidth_gb_s == 484
    assert (g.power_8pin, g.power_6pin) == (1, 1)
    assert g.fp16_tflops is not None and g.fp16_tflops < g.fp32_tflops / 32


def test_v100_sxm2_32gb_matches_v100_datasheet() -> None:
    # NVIDIA Tesla V100 datasheet, SXM2 column: 32 GB HBM2, 900 GB/s, 125 tensor TFLOPS,
    # NVLink 300 GB/s, 300 W; 8-GPU boards use an NVLink hybrid cube mesh (no NVSwitch)
    g = gpu("V100 SXM2 32GB")
    assert g.memory_gb == 32
    assert g.memory_bandwidth_gb_s == 900
    assert g.fp16_tensor_tflops == 125
    assert g.nvlink_gb_s == 300
    assert g.tdp_w == 300
    assert g.interconnect is Interconnect.NVLINK
    assert g.bf16_tensor_tflops is None  # Volta has no BF16


def test_a100_sxm_80gb_matches_a100_datasheet() -> None:
    # NVIDIA A100 datasheet, 80GB SXM column: 2039 GB/s, TF32 156 / BF16 312 dense (312/624
    # with sparsity), 400 W, NVLink 600 GB/s
    g = gpu("A100 80GB SXM")
    assert g.memory_bandwidth_gb_s == 2039
    assert g.tf32_tensor_tflops == 156
    assert g.bf16_tensor_tflops == 312
    assert g.tdp_w == 400
    assert g.nvlink_gb_s == 600


def test_rtx_3090_matches_ga102_whitepaper() -> None:
    # NVIDIA GA102 whitepaper appendix (GeForce RTX 3090): 936 GB/s, 35.6 FP32, FP16 tensor 71
    # with FP32 accumulate and 142 with FP16 accumulate (dense); NVLink bridge 112.5 GB/s
    g = gpu("RTX 3090")
    assert g.memory_bandwidth_gb_s == 936
    assert g.fp32_tflops == 35.6
    assert g.fp16_tensor_tflops == 71
    assert g.fp16_tensor_fp16acc_tflops == 142
    assert g.nvlink_gb_s == 112.5


def test_l40s_datasheet_sparse_figures_are_halved() -> None:
    # NVIDIA L40S datasheet: FP16/BF16 733 and FP8 1466 TFLOPS with sparsity, 362.05 and 733
    # dense; 48 GB, 864 GB/s, 350 W
    g = gpu("L40S")
    assert g.bf16_tensor_tflops == pytest.approx(362.05, abs=0.1)
    assert g.fp8_tensor_tflops == 733
    assert g.memory_bandwidth_gb_s == 864
    assert g.tdp_w == 350


def test_mi300x_matches_amd_datasheet() -> None:
    # AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, FP16/BF16 1307.4 and FP8 2614.9
    # dense TFLOPS, 750 W, OAM module
    g = gpu("MI300X")
    assert g.memory_gb == 192
    assert g.memory_bandwidth_gb_s == 5300
    assert g.fp16_tensor_tflops == 1307.4
    assert g.fp8_tensor_tflops == 2614.9
    assert g.tdp_w == 750
    assert g.form is FormFactor.OAM


def test_mi325x_has_the_mi300x_compute_peak_and_its_own_memory() -> None:
    # AMD MI325X page: the MI300X's CDNA 3 die, dense FP16/BF16 1307.4 and FP8 2614.9 TFLOPS
    # (AMD's with-sparsity figures are 2x), 256 GB HBM3E at 6 TB/s, 1000 W; 7 Infinity Fabric
    # links at 896 GB/s as the MI300X (ROCm docs: both gfx942 with 304 CUs)
    mi325x, mi300x = gpu("MI325X"), gpu("MI300X")
    assert mi325x.bf16_tensor_tflops == mi300x.bf16_tensor_tflops == 1307.4
    assert mi325x.fp8_tensor_tflops == mi300x.fp8_tensor_tflops == 2614.9
    assert (mi325x.memory_gb, mi325x.memory_bandwidth_gb_s, mi325x.tdp_w) == (256, 6000, 1000)
    assert mi325x.infinity_fabric_gb_s == mi300x.infinity_fabric_gb_s == 896


def test_mi250_matches_amd_mi250_microarchitecture_table() -> None:
    # ROCm docs, MI250 microarchitecture (peak table for the OAM module): FP16/BF16 matrix
    # 362.1, FP32 vector 45.3, FP32 matrix 90.5 TFLOPS; 3.2 TB/s; 128 GiB (gpu-specs table);
    # 6 Infinity Fabric links at 100 GB/s (the MI250X has 8: 800 GB/s); no FP8 on CDNA 2
    g = gpu("MI250")
    assert (g.bf16_tensor_tflops, g.fp32_tflops, g.fp32_matrix_tflops) == (362.1, 45.3, 90.5)
    assert (g.memory_gb, g.memory_bandwidth_gb_s) == (128, 3276.8)
    assert (g.infinity_fabric_links, g.infinity_fabric_gb_s) == (6, 600)
    assert gpu("MI250X").infinity_fabric_gb_s == 800
    assert g.fp8_tensor_tflops is None
    assert g.form is FormFactor.OAM and g.architecture == "CDNA 2"


def test_cdna_fp32_matrix_rate_is_twice_the_vector_rate() -> None:
    # AMD product pages: CDNA 1/2 FP32 matrix (MFMA) is twice the vector rate: MI100 46.1 of
    # 23.1, MI210 45.3 of 22.6, MI250X 95.7 of 47.9; CDNA 3 has them equal (MI300X 163.4) and
    # records none
    for name, matrix in (("MI100", 46.1), ("MI210", 45.3), ("MI250", 90.5), ("MI250X", 95.7)):
        g = gpu(name)
        assert g.fp32_matrix_tflops == matrix
        assert g.fp32_matrix_tflops == pytest.approx(2 * g.fp32_tflops, rel=0.01)
    assert gpu("MI300X").fp32_matrix_tflops is None


def test_infinity_fabric_is_links_times_the_per_link_rate() -> None:
    # AMD: MI100 3 x 92 GB/s, MI210 3 x 100, MI250X 8 x 100, MI300X/MI325X 7 x 128 (64 GB/s a
    # direction), MI355X 7 x 153.6; the OAM boards' 7 links fully connect 8 GPUs
    for name, links, per_link in (
        ("MI100", 3, 92), ("MI210", 3, 100), ("MI250X", 8, 100), ("MI300X", 7, 128),
        ("MI325X", 7, 128), ("MI355X", 7, 153.6),
    ):  # fmt: skip
        g = gpu(name)
        assert g.infinity_fabric_links == links, name
        assert g.infinity_fabric_gb_s == pytest.approx(links * per_link), name
    for g in GPUS:
        if g.vendor is Vendor.NVIDIA:
            assert g.infinity_fabric_gb_s is None and g.infinity_fabric_links is None, g.name


def test_mi355x_fp4_is_twice_its_fp8() -> None:
    # CDNA 4: MXFP4 16,384 FLOP/clock/CU, twice FP8's 8,192: 10 PF dense against 5 PF (AMD)
    g = gpu("MI355X")
    assert g.fp4_tensor_tflops == 2 * g.fp8_tensor_tflops == 10000


def test_rtx_6000_ada_is_a_full_rate_blower_workstation_card() -> None:
    # Ada whitepaper appendix (RTX 6000 Ada): 364.2 FP16 tensor TFLOPS with either accumulate
    # (professional cards are not halved), 48 GB, 960 GB/s, 300 W; dual-slot blower
    g = gpu("RTX 6000 Ada")
    assert g.fp16_tensor_tflops == 364.2
    assert g.fp16_tensor_fp16acc_tflops is None
    assert g.memory_gb == 48
    assert g.cooler is CoolerType.BLOWER
    assert g.slots == 2


def test_t4_is_slot_powered_low_profile() -> None:
    # NVIDIA T4 datasheet: 65 mixed-precision TFLOPS, 70 W, single-slot low profile, no
    # auxiliary power connector
    g = gpu("T4")
    assert g.fp16_tensor_tflops == 65
    assert g.tdp_w == 70
    assert g.slots == 1
    assert g.power_8pin + g.power_6pin + g.power_eps_8pin + g.power_12v_2x6 == 0


def test_quadro_rtx_6000_matches_turing_whitepaper() -> None:
    # Turing whitepaper appendix (Quadro RTX 6000): 16.3 FP32, 130.5 FP16 tensor TFLOPS with
    # FP32 accumulate (full rate on Quadro), 672 GB/s, 260 W; Epoch AI: 24 GB, 260 W
    g = gpu("Quadro RTX 6000")
    assert g.fp32_tflops == 16.3
    assert g.fp16_tensor_tflops == 130.5
    assert g.fp16_tensor_fp16acc_tflops is None
    assert g.memory_bandwidth_gb_s == 672
    assert (g.memory_gb, g.tdp_w) == (24, 260)
    assert gpu("Quadro RTX 8000").memory_gb == 48


def test_rtx_3070_matches_ga102_whitepaper_appendix() -> None:
    # GA102 whitepaper appendix (GeForce RTX 3070): 20.3 FP32, FP16 tensor 81.3 dense with FP16
    # accumulate and 40.6 with FP32 accumulate, 448 GB/s, 220 W
    g = gpu("RTX 3070")
    assert g.fp32_tflops == 20.3
    assert g.fp16_tensor_fp16acc_tflops == 81.3
    assert g.fp16_tensor_tflops == 40.6
    assert g.memory_bandwidth_gb_s == 448
    assert g.tdp_w == 220


def test_rtx_a5500_dense_tensor_rate_is_sm_count_times_clock() -> None:
    # 80 SMs x 1665 MHz boost x 1024 dense FP16 FLOP per SM per clock (GA102 whitepaper) =
    # 136.4 TFLOPS, half the 272.8 sparse figure; FP32 34.1 TFLOPS (10240 cores x 2 x 1665 MHz)
    g = gpu("RTX A5500")
    assert g.fp16_tensor_tflops == pytest.approx(80 * 1.665 * 1024 / 1000, abs=0.05)
    assert g.fp32_tflops == pytest.approx(10240 * 2 * 1.665 / 1000, abs=0.05)


# --- consistency properties over the whole catalog ------------------------------------------

NVIDIA_AMPERE_PLUS = {"Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra"}
NO_FP8 = {"Pascal", "Volta", "Turing", "Ampere", "CDNA", "CDNA 2", "RDNA 3"}


def tensor_rates(g: GPU) -> list[float]:
    rates = [
        g.tf32_tensor_tflops,
        g.fp16_tensor_tflops,
        g.fp16_tensor_fp16acc_tflops,
        g.bf16_tensor_tflops,
        g.fp8_tensor_tflops,
    ]
    return [r for r in rates if r is not None]


def test_tensor_rates_are_at_least_fp32() -> None:
    for g in GPUS:
        for rate in tensor_rates(g):
            assert rate >= g.fp32_tflops, g.name


def test_precision_ladder_is_ordered() -> None:
    # fewer bits never run slower: TF32 <= FP16/BF16 <= FP8 where present
    for g in GPUS:
        if g.tf32_tensor_tflops is not None and g.fp16_tensor_tflops is not None:
            assert g.tf32_tensor_tflops <= g.fp16_tensor_tflops, g.name
        if g.fp16_tensor_tflops is not None and g.fp8_tensor_tflops is not None:
            assert g.fp16_tensor_tflops <= g.fp8_tensor_tflops, g.name


def test_bf16_equals_fp16_on_nvidia_datacenter_ampere_and_later() -> None:
    checked = 0
    for g in GPUS:
        if (
            g.vendor is Vendor.NVIDIA
            and g.segment is Segment.DATACENTER
            and g.architecture in NVIDIA_AMPERE_PLUS
            and g.bf16_tensor_tflops is not None
            and g.fp16_tensor_tflops is not None
        ):
            assert g.bf16_tensor_tflops == g.fp16_tensor_tflops, g.name
            checked += 1
    assert checked >= 15


def test_fp16_accumulate_rate_is_kept_for_consumer_cards_only() -> None:
    # GeForce runs FP16 with FP32 accumulate at half the FP16-accumulate rate; TITAN RTX runs
    # both at full rate; professional and datacenter cards publish one rate
    for g in GPUS:
        acc16 = g.fp16_tensor_fp16acc_tflops
        if acc16 is None:
            continue
        assert g.segment is Segment.CONSUMER, g.name
        assert g.fp16_tensor_tflops is not None, g.name
        ratio = acc16 / g.fp16_tensor_tflops
        expected = 1.0 if g.name.startswith("NVIDIA TITAN") else 2.0
        assert ratio == pytest.approx(expected, rel=0.01), g.name


def test_every_rtx_geforce_card_keeps_both_accumulate_rates() -> None:
    for g in GPUS:
        if g.name.startswith("GeForce RTX"):
            assert g.fp16_tensor_fp16acc_tflops is not None, g.name


def test_no_fp8_before_ada_hopper_or_cdna3() -> None:
    for g in GPUS:
        if g.architecture in NO_FP8:
            assert g.fp8_tensor_tflops is None, g.name


def test_modules_have_no_slots_length_or_cables() -> None:
    for g in GPUS:
        if g.form in {FormFactor.SXM, FormFactor.OAM}:
            assert g.slots is None and g.length_mm is None, g.name
            assert g.cooler is CoolerType.PASSIVE, g.name
            assert g.power_8pin + g.power_6pin + g.power_eps_8pin + g.power_12v_2x6 == 0


def test_pcie_cards_have_slots_and_length() -> None:
    for g in GPUS:
        if g.form is FormFactor.PCIE and g.name not in MOBILE:
            assert g.slots is not None and 1 <= g.slots <= 4, g.name
            assert g.length_mm is not None and 150 <= g.length_mm <= 340, g.name


def test_laptop_gpus_are_not_cards_and_say_which_tgp_they_record() -> None:
    # a laptop GPU has no slot width, card length, connectors or price of its own; its clocks
    # (hence every rate) depend on the laptop's TGP, so its notes must name the configuration
    mobile = [g for g in GPUS if g.name in MOBILE]
    assert {g.name for g in mobile} == MOBILE
    for g in mobile:
        assert g.slots is None and g.length_mm is None, g.name
        assert g.power_8pin + g.power_6pin + g.power_eps_8pin + g.power_12v_2x6 == 0, g.name
        assert g.price_usd is None, g.name
        assert g.notes.startswith("Laptop GPU. Recorded configuration:"), g.name
        assert f"{g.tdp_w:.0f} W" in g.notes, g.name


@pytest.mark.parametrize(
    ("name", "tgp_w"),
    [
        # the TGP of Lambda's test machine, data/calibration/lambda_pytorch_train_v0_2022.csv
        # column watt_total (the RTX 3080 Max-Q rows are Lambda's Tensorbook, 80 W)
        ("GeForce RTX 3080 Laptop GPU", 80),
        ("GeForce RTX 2080 Super Max-Q", 80),
        ("GeForce RTX 2080 Max-Q", 90),
        ("GeForce RTX 2070 Max-Q", 90),
    ],
)
def test_laptop_gpus_record_lambdas_tgp(name: str, tgp_w: float) -> None:
    assert gpu(name).tdp_w == tgp_w


def test_datacenter_cards_are_passive_and_desktop_cards_are_not() -> None:
    for g in GPUS:
        if g.segment is Segment.DATACENTER:
            assert g.cooler is CoolerType.PASSIVE, g.name
        else:
            assert g.cooler in {CoolerType.BLOWER, CoolerType.OPEN_AIR}, g.name


def test_connectors_can_deliver_the_board_power() -> None:
    # PCIe CEM limits: slot 75 W, 6-pin 75 W, 8-pin 150 W, 12V-2x6 600 W; CPU/EPS 8-pin 300 W
    # and "250 W cards with a single PCIe 8-pin" (RTX A5000, 230 W) per NVIDIA's Power
    # Guidelines for Workstation Products (DA-07261-001). A card whose TDP exceeds what its
    # inputs can carry has a connector count wrong. Cards whose connectors are unconfirmed
    # (counts left at 0) say so in their notes and are skipped, as are laptop GPUs (MOBILE),
    # which the laptop's own regulators feed.
    for g in GPUS:
        if g.form is not FormFactor.PCIE or "not confirmed" in g.notes or g.name in MOBILE:
            continue
        budget_w = (
            75
            + 75 * g.power_6pin
            + 150 * g.power_8pin
            + 300 * g.power_eps_8pin
            + 600 * g.power_12v_2x6
        )
        if g.power_8pin == 1 and g.power_6pin == 0 and g.power_12v_2x6 == 0:
            budget_w = max(budget_w, 250)
        assert g.tdp_w <= budget_w, f"{g.name}: {g.tdp_w} W > {budget_w} W"


def test_nvlink_figures_match_the_interconnect() -> None:
    for g in GPUS:
        if g.interconnect in {
            Interconnect.NVLINK,
            Interconnect.NVSWITCH,
            Interconnect.NVLINK_BRIDGE,
        }:
            assert g.nvlink_gb_s is not None, g.name
        if g.interconnect is Interconnect.INFINITY_FABRIC or g.vendor is Vendor.AMD:
            assert g.nvlink_gb_s is None, g.name
        if g.interconnect is Interconnect.INFINITY_FABRIC:
            assert g.vendor is Vendor.AMD, g.name


def test_sxm_nvlink_generations() -> None:
    # NVLink per GPU as NVIDIA quotes it: Volta 300, Ampere 600, Hopper 900, Blackwell 1800 GB/s
    expected = {"Volta": 300, "Ampere": 600, "Hopper": 900, "Blackwell": 1800}
    for g in GPUS:
        if g.form is FormFactor.SXM and g.architecture in expected:
            assert g.nvlink_gb_s == expected[g.architecture], g.name


def test_full_rate_tensor_to_fp32_ratio_per_architecture() -> None:
    # Per SM and clock, a Turing SM does 1024 dense FP16 tensor FLOP and 128 FP32 FLOP (ratio
    # 8); a GA10x Ampere SM 1024 and 256 (ratio 4) (Turing and GA102 whitepapers). The full-rate
    # tensor figure is the FP16-accumulate rate on GeForce, the only rate elsewhere. Guards the
    # computed entries (laptop GPUs, RTX A4500/A5500) against clock or SM slips. GA100
    # (A100, A30) differs and is datacenter, hence left out.
    expected = {"Turing": 8.0, "Ampere": 4.0}
    checked = 0
    for g in GPUS:
        if g.vendor is not Vendor.NVIDIA or g.architecture not in expected:
            continue
        if g.architecture == "Ampere" and g.segment is Segment.DATACENTER:
            continue
        full_rate = g.fp16_tensor_fp16acc_tflops or g.fp16_tensor_tflops
        assert full_rate is not None, g.name
        assert full_rate / g.fp32_tflops == pytest.approx(expected[g.architecture], rel=0.015), (
            g.name
        )
        checked += 1
    assert checked >= 16


def test_bandwidth_per_gb_is_plausible() -> None:
    # guards against unit slips (TB/s typed as GB/s, GiB vs GB): every GPU in the catalog has
    # between 10 and 80 GB/s of bandwidth per GB of memory
    for g in GPUS:
        ratio = g.memory_bandwidth_gb_s / g.memory_gb
        assert 10 <= ratio <= 80, (g.name, ratio)


# --- the command -----------------------------------------------------------------------------


def test_catalog_gpus_json_lists_every_gpu() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "catalog", "gpus", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [row["name"] for row in rows] == [g.name for g in GPUS]
    first = rows[0]
    assert first["memory_gb"] == 11 and first["cooler"] == "blower"
    assert all(
        "sources" in row and "price_usd" in row for row in rows if row["name"] not in UNPRICED
    )


def test_boost_clocks_reproduce_the_fp32_rate() -> None:
    # FP32 TFLOPS = 2 x CUDA cores x boost clock: RTX 4090 16384 cores x 2520 MHz = 82.6
    # (Ada whitepaper); RTX 5000 Ada 12800 x 2550 = 65.3; L4 7424 x 2040 = 30.3.
    from dlrig.catalog.loader import builtin_catalog

    gpus = {g.name: g for g in builtin_catalog().gpus}
    for name, cores in [
        ("GeForce RTX 4090", 16384),
        ("NVIDIA RTX 5000 Ada Generation", 12800),
        ("NVIDIA L4", 7424),
    ]:
        g = gpus[name]
        assert g.boost_clock_mhz is not None and g.base_clock_mhz is not None
        assert 2 * cores * g.boost_clock_mhz / 1e6 == pytest.approx(g.fp32_tflops, rel=0.005)
        assert g.base_clock_mhz < g.boost_clock_mhz
        assert "clocks" in g.sources


def test_a_base_clock_above_the_boost_is_rejected() -> None:
    from dlrig.catalog.loader import builtin_catalog

    card = next(g for g in builtin_catalog().gpus if g.name == "NVIDIA L4")
    with pytest.raises(ValueError, match="base_clock_mhz 3000 is above boost_clock_mhz 2040"):
        type(card).model_validate({**card.model_dump(), "base_clock_mhz": 3000})
