"""NVIDIA's Xid catalog as data (`data/xid_catalog.toml`, with its source and the date it was
read): each Xid's description and resolution buckets, and what dlrig makes of a bucket: how
severe it is for the machine and the action it asks for."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from dlrig.enums import Severity


@dataclass(frozen=True)
class BucketAction:
    """What a resolution bucket asks for, in words, and how severe it is for health's exit:
    an error needs an action on the machine (reset, reboot, RMA), a warning on the job."""

    severity: Severity
    action: str


# NVIDIA's "Fault Resolution Buckets" sheet of the catalog, each read as one action.
BUCKETS: dict[str, BucketAction] = {
    "IGNORE": BucketAction(Severity.INFO, "no action needed (NVIDIA: IGNORE)"),
    "RESTART_APP": BucketAction(
        Severity.WARNING, "restart the application; the GPU needs no reset (NVIDIA: RESTART_APP)"
    ),
    "RESET_GPU": BucketAction(
        Severity.ERROR,
        "stop its processes and reset the GPU (nvidia-smi -r), or reboot (NVIDIA: RESET_GPU)",
    ),
    "RESTART_BM": BucketAction(Severity.ERROR, "reboot the machine (NVIDIA: RESTART_BM)"),
    "RESTART_VM": BucketAction(
        Severity.ERROR, "restart the VM that owns the GPU (NVIDIA: RESTART_VM)"
    ),
    "CHECK_MECHANICALS": BucketAction(
        Severity.ERROR,
        "check the card's seating and its power connectors (NVIDIA: CHECK_MECHANICALS)",
    ),
    "CONTACT_SUPPORT": BucketAction(
        Severity.ERROR, "contact your support organization (NVIDIA: CONTACT_SUPPORT)"
    ),
    "UPDATE_SWFW": BucketAction(
        Severity.ERROR, "update the driver and firmware (NVIDIA: UPDATE_SWFW)"
    ),
    "WORKFLOW_XID_48": BucketAction(
        Severity.ERROR,
        "reset the GPU (drain and reset when Xid 63 or 64 came with it); run field diagnostics "
        "if it recurs (NVIDIA: WORKFLOW_XID_48)",
    ),
    "WORKFLOW_XID_45": BucketAction(
        Severity.INFO,
        "follow the Xid it came with; alone, restart the fabric manager (NVIDIA: WORKFLOW_XID_45)",
    ),
    "WORKFLOW_XID_13": BucketAction(
        Severity.WARNING,
        "restart the application and check it with compute-sanitizer; if it repeats on the "
        "same GPU, run DCGM diagnostics (NVIDIA: WORKFLOW_XID_13)",
    ),
    "WORKFLOW_XID_31": BucketAction(
        Severity.WARNING,
        "restart the application and check it with compute-sanitizer; repeated faults on the "
        "same GPU want DCGM diagnostics (NVIDIA: WORKFLOW_XID_31)",
    ),
    "WORKFLOW_NVLINK_ERR": BucketAction(
        Severity.ERROR,
        "reset the GPU or reboot; if the error persists, contact the hardware vendor (NVIDIA: "
        "WORKFLOW_NVLINK_ERR)",
    ),
    "WORKFLOW_NVLINK5_ERR": BucketAction(
        Severity.ERROR,
        "decode the message's registers with NVIDIA's Xid 144-150 table; a fatal one needs a "
        "GPU reset (NVIDIA: WORKFLOW_NVLINK5_ERR)",
    ),
    "CHECK_UVM": BucketAction(
        Severity.WARNING, "reset the GPU if UVM or vGPU is in use, else nothing (NVIDIA: CHECK_UVM)"
    ),
}
NO_BUCKET = BucketAction(
    Severity.WARNING, "the catalog gives no resolution bucket: see its trigger conditions"
)
UNKNOWN = BucketAction(
    Severity.WARNING,
    "not in NVIDIA's Xid catalog for Ampere and newer: see the driver's documentation",
)

# Xid 154's message names the recovery action the driver derived for the other Xids:
# "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)".
_RECOVERY = re.compile(r"to 0x[0-9a-fA-F]+ \(([^)]+)\)")
_RECOVERY_ACTIONS = {
    "none": BucketAction(Severity.INFO, "no recovery action needed (Xid 154: None)"),
    "drain p2p": BucketAction(
        Severity.WARNING, "drain peer-to-peer traffic from the GPU (Xid 154: Drain P2P)"
    ),
    "drain and reset": BucketAction(
        Severity.ERROR, "drain the GPU's jobs, then reset it (Xid 154: Drain and Reset)"
    ),
    "gpu reset required": BucketAction(
        Severity.ERROR, "reset the GPU (Xid 154: GPU Reset Required)"
    ),
    "node reboot required": BucketAction(
        Severity.ERROR, "reboot the machine (Xid 154: Node Reboot Required)"
    ),
}


@dataclass(frozen=True)
class XidInfo:
    """One Xid code as the catalog describes it."""

    code: int
    mnemonic: str
    description: str
    applies: tuple[str, ...]
    immediate: str
    investigatory: str


@dataclass(frozen=True)
class XidCatalog:
    """The catalog: its entries by code, the codes it calls unused, and where it came from."""

    entries: dict[int, XidInfo]
    unused: frozenset[int]
    unused_bucket: str
    source: dict[str, Any]

    def resolve(self, code: int, message: str = "") -> tuple[XidInfo | None, BucketAction]:
        """The entry of an Xid and the action its immediate bucket asks for."""
        info = self.entries.get(code)
        if info is None:
            if code in self.unused:
                return None, BUCKETS[self.unused_bucket]
            return None, UNKNOWN
        if info.immediate == "XID_154":
            match = _RECOVERY.search(message)
            action = _RECOVERY_ACTIONS.get(match.group(1).strip().lower()) if match else None
            return info, action or BucketAction(
                Severity.WARNING, "follow the recovery action the driver logged (Xid 154)"
            )
        return info, BUCKETS.get(info.immediate, NO_BUCKET)


@functools.cache
def load_xid_catalog() -> XidCatalog:
    """The shipped catalog, parsed once."""
    text = resources.files("dlrig.health").joinpath("data/xid_catalog.toml").read_text("utf-8")
    data = tomllib.loads(text)
    entries = {
        int(row["code"]): XidInfo(
            code=int(row["code"]),
            mnemonic=str(row["mnemonic"]),
            description=str(row["description"]),
            applies=tuple(row["applies"]),
            immediate=str(row["immediate"]),
            investigatory=str(row["investigatory"]),
        )
        for row in data["xid"]
    }
    return XidCatalog(
        entries=entries,
        unused=frozenset(int(c) for c in data["unused"]),
        unused_bucket=str(data["unused_bucket"]),
        source=dict(data["source"]),
    )
