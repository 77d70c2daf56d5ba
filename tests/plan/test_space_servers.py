"""Cards that need a server (passive PCIe, SXM) cannot be planned while every server that takes
them is unpriced: the search names them, so a buyer at 150,000 USD learns why no H100 appears
and what would bring it in (a quote for the server, --catalog)."""

from __future__ import annotations

from pathlib import Path

from dlrig.catalog.loader import builtin_catalog, load_catalog
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.kinds import BuildForm
from dlrig.plan.space import search_space


def _homeless(catalog_file: Path | None = None, **constraints: object) -> list[str]:
    catalog = load_catalog(catalog_file) if catalog_file else builtin_catalog()
    wanted = Constraints(**constraints)  # type: ignore[arg-type]
    space = search_space(catalog, wanted, part_filter(wanted, catalog), 10.0)
    return [name for name, _ in space.no_priced_server]


def test_passive_and_sxm_cards_without_a_priced_server_are_named() -> None:
    """The built-in catalog prices the H100 PCIe (30,000 USD) and the L40S (8,500) but none of
    the PCIe GPU servers (Supermicro SYS-421GE-TNRT, SYS-741GE-TNRT: no public price), and
    COOL.1 keeps passive cards out of desktops. The A100 SXM4 40GB is not named: the priced
    DGX A100 (320GB) holds it. Consumer cards never need a server."""
    named = _homeless()
    assert {"H100 PCIe 80GB", "NVIDIA L40S", "H100 SXM5 80GB"} <= set(named)
    assert "A100 SXM4 40GB" not in named
    assert "GeForce RTX 4090" not in named


def test_a_quote_for_the_server_brings_its_cards_back(tmp_path: Path) -> None:
    quote = tmp_path / "quotes.yaml"
    quote.write_text(
        "platforms:\n"
        "  - {name: Supermicro SYS-421GE-TNRT, price_usd: 12000, price_date: 2026-11-30}\n"
    )
    named = _homeless(quote)
    assert "H100 PCIe 80GB" not in named and "NVIDIA L40S" not in named
    assert "H100 SXM5 80GB" in named  # an HGX board, not a PCIe server


def test_a_workstation_plan_names_none() -> None:
    """The user asked for a workstation: the server cards are out by their choice."""
    assert _homeless(form=BuildForm.WORKSTATION) == []
