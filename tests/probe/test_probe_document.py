"""The probed machine as a build file that the build loader accepts (probe:latest)."""

from __future__ import annotations

from probe_helpers import disk, scenario_result

from dlrig.catalog import load_catalog
from dlrig.enums import StorageKind
from dlrig.machine import resolve_build
from dlrig.probe.document import inferred_kind, probe_build_document

CATALOG = load_catalog()


def test_four_gpu_box_becomes_four_catalog_rtx_3090s_that_resolve() -> None:
    doc = probe_build_document(scenario_result("four_gpu_box", disks=(disk(180.0),)), CATALOG)
    build = doc["build"]
    # max link Gen4 x16 is what the card has: no pcie override
    assert build["gpus"] == [{"model": "GeForce RTX 3090", "count": 4}]
    assert build["memory"] == {"size_gb": 128.0}
    assert build["cpu"] == "AMD Ryzen Threadripper 7960X"  # "... 24-Cores" as /proc names it
    assert build["storage"][0]["spec"]["kind"] == "hdd"  # sda with rotational=1
    assert build["storage"][0]["spec"]["read_mb_s"] == 180.0
    resolved = resolve_build(build, "probe", CATALOG)
    assert resolved.gpu_count == 4


def test_a_lost_gpu_is_left_out_and_said_so() -> None:
    doc = probe_build_document(scenario_result("lost_gpu"), CATALOG)
    assert doc["build"]["gpus"] == [{"model": "A100 SXM4 80GB", "count": 1}]
    assert any("GPU 1 is lost" in a for a in doc["assumptions"])


def test_no_gpu_machine_has_no_gpus_key_and_resolves() -> None:
    doc = probe_build_document(scenario_result("laptop_without_gpu"), CATALOG)
    assert "gpus" not in doc["build"]
    resolve_build(doc["build"], "probe", CATALOG)


def test_virtual_disk_kind_is_inferred_from_its_rate_and_stated() -> None:
    doc = probe_build_document(
        scenario_result("laptop_without_gpu", disks=(disk(1800.0, "vda", True),)), CATALOG
    )
    assert doc["build"]["storage"][0]["spec"]["kind"] == "nvme"
    assert any("virtual disk" in a for a in doc["assumptions"])


def test_inferred_kind_thresholds() -> None:
    assert inferred_kind(150.0) is StorageKind.HDD
    assert inferred_kind(520.0) is StorageKind.SATA_SSD
    assert inferred_kind(3500.0) is StorageKind.NVME


def test_a_cpu_the_catalog_lacks_is_kept_as_a_partial_inline_spec() -> None:
    """Issue 9: the probed CPU goes into probe:latest even when the catalog lacks it, with what
    /proc gives per socket (2 sockets x 32 cores / 64 threads here); the rest is unknown."""
    from dataclasses import replace

    from dlrig.rules import check_build

    result = scenario_result("laptop_without_gpu")
    cpu = replace(result.cpu, model="Mystery Xeon 9999", sockets=2, cores=64, threads=128)
    doc = probe_build_document(replace(result, cpu=cpu), CATALOG)
    assert doc["build"]["cpu"]["spec"]["name"] == "Mystery Xeon 9999"
    assert doc["build"]["cpu"]["spec"]["cores"] == 32
    assert doc["build"]["cpu"]["count"] == 2
    build = resolve_build(doc["build"], "probe", CATALOG)
    assert build.cpu is not None and build.cpu.cores == 32 and build.cpu_count == 2
    assert "pcie_lanes" in build.cpu.unknown_fields
    assert any(f.message.startswith("unknown:") for f in check_build(build).findings)


def test_an_uncatalogued_cpu_takes_the_pcie_gen_its_gpus_links_read() -> None:
    """Recorded on a lent H200 VM (tests/fixtures/nvml/h200_recorded_under_load.json): /proc
    names the CPU only "Intel(R) Xeon(R) Processor", and NVML reads the card's maximum link as
    Gen5 x16, which is "possible with this device and system". dlrig assumed Gen4 for the
    unknown CPU, and `probe --train` then estimated a batch's copy at 6.4 ms where it took
    2.8 ms (55 GB/s pinned, measured there). The CPU now takes Gen5 from the link."""
    from dataclasses import replace

    from dlrig.machine.topology import topology

    result = scenario_result("h200_recorded_under_load", loaded=True)
    result = replace(result, cpu=replace(result.cpu, model="Intel(R) Xeon(R) Processor"))
    doc = probe_build_document(result, CATALOG)
    assert doc["build"]["gpus"] == [{"model": "H200 SXM 141GB", "count": 1}]
    assert doc["build"]["cpu"]["spec"]["pcie_gen"] == 5
    assert any("PCIe Gen5 as its GPUs' links read" in a for a in doc["assumptions"])
    (link,) = topology(resolve_build(doc["build"], "probe", CATALOG)).links
    assert (link.gen, link.lanes) == (5, 16)
