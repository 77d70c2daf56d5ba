"""`--prices FILE`: dlrig's own format (YAML, TOML, CSV) and SkyPilot's catalog CSV, merged
into the snapshot; every bad file is one error naming the file, the row and the field."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.cloud.loader import load_prices
from dlrig.cloud.skypilot import ACCELERATORS, catalog_gpu_name, parse_skypilot_csv
from dlrig.errors import DlrigError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cloud"
# Recorded: lines of SkyPilot's Lambda catalog (github.com/skypilot-org/skypilot-catalog,
# catalogs/v7/lambda/vms.csv @11580132): its header, a CPU row and four GPU rows, as they are.
SKYPILOT_LAMBDA = (FIXTURES / "skypilot_lambda_vms_recorded.csv").read_text()
# Hand-made in the format of SkyPilot's AWS catalog (zones in AvailabilityZone, a SpotPrice per
# zone, accelerators dlrig does not know): the prices are illustrative, not AWS's.
SKYPILOT_AWS_SHAPE = (FIXTURES / "skypilot_aws_shape_handmade.csv").read_text()


def _write(path: Path, text: str, mtime: dt.date | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        stamp = dt.datetime.combine(mtime, dt.time(12)).timestamp()
        os.utime(path, (stamp, stamp))
    return path


def test_every_skypilot_accelerator_maps_to_a_catalog_gpu() -> None:
    cat = load_catalog()
    from dlrig.catalog.schema import GPU

    for name in {*ACCELERATORS.values()}:
        assert cat.find(GPU, name).name == name
    assert catalog_gpu_name("A100", "gpu_8x_a100", "{'SizeInMiB': 81920}") == "A100 SXM4 80GB"
    assert catalog_gpu_name("H100", "gpu_1x_h100_pcie", "") == "H100 PCIe 80GB"
    assert catalog_gpu_name("Trainium", "trn1.32xlarge", "") is None


def test_skypilots_lambda_catalog_reads_as_offers(tmp_path: Path) -> None:
    """The recorded Lambda lines: 8x A100 40GB at 10.32 USD/h, 1x and 8x H100 SXM at 3.29 and
    23.92, a GH200 at 1.49; the CPU row is no offer. Provider from the folder (lambda/vms.csv),
    date from the file's modification day."""
    path = _write(tmp_path / "lambda" / "vms.csv", SKYPILOT_LAMBDA, dt.date(2026, 11, 20))
    offers = [o for o in load_prices(load_catalog(), path).offers if o.source.startswith("Sky")]
    got = {(o.instance, o.gpu.name, o.gpus, o.price_per_hour_usd) for o in offers}
    assert got == {
        ("gpu_8x_a100", "A100 SXM4 40GB", 8, 10.32),
        ("gpu_1x_h100_sxm5", "H100 SXM5 80GB", 1, 3.29),
        ("gpu_8x_h100_sxm5", "H100 SXM5 80GB", 8, 23.92),
        ("gpu_1x_gh200", "GH200 96GB", 1, 1.49),
    }
    assert {o.provider for o in offers} == {"Lambda"}
    assert {o.price_date for o in offers} == {dt.date(2026, 11, 20)}
    assert all(not o.spot for o in offers)
    h100 = next(o for o in offers if o.instance == "gpu_1x_h100_sxm5")
    assert h100.vcpus == 26 and h100.ram_gb == pytest.approx(225 * 2**30 / 1e9)


def test_skypilot_zones_collapse_to_the_lowest_spot_and_unknowns_are_counted() -> None:
    """p5.48xlarge in two zones: one on-demand offer (55.04) and one spot at the lower zone's
    26.5; A100-80GB is the 80 GB SXM4 part; Trainium and A10G have no catalog GPU."""
    found = parse_skypilot_csv(SKYPILOT_AWS_SHAPE, "aws/vms.csv", "AWS", "2026-11-20")
    p5 = next(r for r in found.rows if r["instance"] == "p5.48xlarge")
    assert p5["on_demand_price_per_hour_usd"] == 55.04
    assert p5["spot_price_per_hour_usd"] == 26.5
    p4de = next(r for r in found.rows if r["instance"] == "p4de.24xlarge")
    assert p4de["gpu"] == "A100 SXM4 80GB" and "spot_price_per_hour_usd" not in p4de
    assert found.unknown_accelerators == {"Trainium": 1, "A10G": 1}
    assert len(found.rows) == 2


def test_a_users_rows_replace_the_snapshots_and_add_new_ones(tmp_path: Path) -> None:
    """Same provider, instance, region and kind: the user's price wins; others are added."""
    path = _write(
        tmp_path / "mine.yaml",
        """
offers:
  - {provider: RunPod, instance: "RTX 4090 (Community Cloud)", region: global, gpu: "4090",
     gpus: 1, on_demand_price_per_hour_usd: 0.29, price_date: 2026-12-01,
     source: "my quote"}
  - {provider: My Lab, instance: 2x A6000, gpu: RTX A6000, gpus: 2, peer_to_peer: false,
     interconnect: pcie, spot_price_per_hour_usd: 0.9, price_date: 2026-12-01, source: quote}
""",
    )
    offers = load_prices(load_catalog(), path).offers
    runpod = [o for o in offers if o.provider == "RunPod" and "4090 (Community" in o.instance]
    assert [o.price_per_hour_usd for o in runpod] == [0.29]
    mine = [o for o in offers if o.provider == "My Lab"]
    assert len(mine) == 1 and mine[0].spot and not mine[0].peer_to_peer
    assert mine[0].gpu.name == "NVIDIA RTX A6000"


def test_own_csv_and_toml_read_alike(tmp_path: Path) -> None:
    csv_file = _write(
        tmp_path / "mine.csv",
        "provider,instance,gpu,gpus,gpu_counts,on_demand_price_per_hour_usd,price_date,source\n"
        "Acme,h100x1,H100 SXM,1,2;4,2.10,2026-11-30,quote 42\n",
    )
    toml_file = _write(
        tmp_path / "mine.toml",
        '[[offer]]\nprovider = "Acme"\ninstance = "h100x1"\ngpu = "H100 SXM"\ngpus = 1\n'
        "gpu_counts = [2, 4]\non_demand_price_per_hour_usd = 2.10\nprice_date = 2026-11-30\n"
        'source = "quote 42"\n',
    )
    for path in (csv_file, toml_file):
        (acme,) = [o for o in load_prices(load_catalog(), path).offers if o.provider == "Acme"]
        assert acme.counts() == (1, 2, 4) and acme.price_for(4) == pytest.approx(8.40)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.yaml", "offers:\n  - {provider: X, instance: y, gpu: H100 SXXM, gpus: 1,"
         " on_demand_price_per_hour_usd: 1, price_date: 2026-01-01, source: s}\n",
         "offer 1 (X y) field 'gpu': unknown gpu 'H100 SXXM'"),
        ("b.yaml", "offers:\n  - {provider: X, instance: y, gpu: 4090, gpus: 1,"
         " price_date: 2026-01-01, source: s}\n", "give on_demand_price_per_hour_usd"),
        ("c.yaml", "offers:\n  - {provider: X, instance: y, gpu: 4090, gpus: 0,"
         " on_demand_price_per_hour_usd: 1, price_date: 2026-01-01, source: s}\n",
         "field 'offers.0.gpus'"),
        ("d.yaml", "offerz: []\n", "unknown key 'offerz'"),
        ("e.yaml", "offers: []\n", "no offers"),
        ("f.csv", "provider,instance,gpu,gpus,price_date,source,cost\n", "unknown column 'cost'"),
        ("g.csv", "provider,instance,gpu,gpus,on_demand_price_per_hour_usd,price_date,source\n"
         "X,y,4090,1,cheap,2026-01-01,s\n", "line 2: field 'on_demand_price_per_hour_usd'"),
        ("vms.csv", SKYPILOT_LAMBDA.replace("3.29", "n/a"),
         "line 4 field 'Price': expected a number, got 'n/a'"),
        ("h.csv", "", "no header row"),
    ],
)  # fmt: skip
def test_bad_price_files_name_the_file_and_the_field(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(DlrigError) as info:
        load_prices(load_catalog(), path)
    message = str(info.value)
    assert str(path) in message and expected in message, message
    assert "\n" not in message
