"""Cooling as a modifier of compute speed (COOL.1, COOL.3, COOL.6, GPU.5)."""

from __future__ import annotations

from dlrig.enums import CoolerType


def thermal_factor(
    cooler: CoolerType,
    gpus_in_node: int,
    factors: dict[str, float],
    spaced: bool = False,
    forced_airflow: bool = False,
) -> float:
    """Share of full speed a GPU keeps under sustained load.

    COOL.1: one GPU loses 0-10% on default fan curves (already inside the calibration, which
    was measured on single cards); several GPUs heating each other lose 10-25%. COOL.3:
    open-air coolers recirculate hot air, so 3-4 of them throttle hardest, while 2 with space
    between them are safe-ish. COOL.6: several blowers cost 10-15%; water loses nothing.
    Passive datacenter cards rely on the server's airflow, designed for the full load.
    `spaced`: two cards with a free slot between them (COOL.3: "air is safe").
    `forced_airflow`: the cards sit in a server whose fan wall pushes air through them, sized
    for the full load (COOL.6's remedy), so the desktop-case throttling does not apply: Lambda's
    8x RTX 6000 Ada (blowers) server trains ResNet-50 8.04x as fast as one card.
    """
    if forced_airflow or gpus_in_node <= 1 or cooler in (CoolerType.WATER, CoolerType.PASSIVE):
        return 1.0
    if gpus_in_node == 2 and spaced:
        return 1.0
    if cooler is CoolerType.OPEN_AIR:
        return factors["open_air_pair"] if gpus_in_node == 2 else factors["open_air_crowded"]
    return factors["blower_pair"] if gpus_in_node == 2 else factors["blower_crowded"]
