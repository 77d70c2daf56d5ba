"""Baseboard management controllers, read-only: Redfish (`redfish`, over DMTF's client library)
and IPMI (`ipmi`, FreeIPMI's or ipmitool's output parsed). Both give a `BmcReading` of the
same types (`readings`); neither can write to the BMC or act on the power."""

from dlrig.hardware.bmc.readings import (
    BmcHealth,
    BmcReading,
    BmcSensor,
    BmcSource,
    LogEntry,
    Redundancy,
    SensorKind,
    Thresholds,
)

__all__ = [
    "BmcHealth",
    "BmcReading",
    "BmcSensor",
    "BmcSource",
    "LogEntry",
    "Redundancy",
    "SensorKind",
    "Thresholds",
]
