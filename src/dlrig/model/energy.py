"""Run totals: time, energy at the wall (PSU efficiency counted), cost and CO2 (PSU.3, CO2.1)."""

from __future__ import annotations

from dlrig.units import wh_to_kwh


def run_time_h(samples: float, samples_per_s: float) -> float:
    """Hours to process `samples` at `samples_per_s`."""
    return samples / samples_per_s / 3600.0 if samples_per_s > 0 else float("inf")


def wall_energy_kwh(dc_power_w: float, hours: float, psu_efficiency: float) -> float:
    """Energy drawn from the wall: the parts' DC power over the PSU's efficiency.

    PSU.3: a 4-GPU system at 1000-1500 W for two weeks uses 336-504 kWh at 100% efficiency;
    an 80% efficient PSU draws a quarter more.
    """
    return wh_to_kwh(dc_power_w * hours) / psu_efficiency


def energy_cost(kwh: float, price_per_kwh: float) -> float:
    """Electricity cost of kwh at price_per_kwh (the build's currency)."""
    return kwh * price_per_kwh


def co2_kg(kwh: float, kg_per_kwh: float) -> float:
    """CO2 emitted for kwh at a grid intensity of kg_per_kwh (CO2.1)."""
    return kwh * kg_per_kwh
