"""The BMC options `health` and `watch` share, and the one place the BMC password is read: the
DLRIG_BMC_PASSWORD variable, else a prompt on the terminal. The password is handed to the BMC
client only; no option takes it, and no message, log or saved reading carries it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from dlrig.hardware.bmc import BmcSource

PASSWORD_VARIABLE = "DLRIG_BMC_PASSWORD"

BmcOption = Annotated[
    str | None,
    typer.Option(
        "--bmc",
        metavar="URL",
        help="read the BMC over Redfish at https://HOST[:PORT] (read-only)",
    ),
]
IpmiOption = Annotated[
    str | None,
    typer.Option(
        "--ipmi",
        metavar="HOST",
        help="read the BMC over IPMI (ipmitool; `local` for this machine's own BMC in-band)",
    ),
]
BmcUserOption = Annotated[
    str | None,
    typer.Option(
        "--bmc-user",
        metavar="USER",
        help=f"the BMC user; the password comes from {PASSWORD_VARIABLE} or a prompt",
    ),
]
InsecureOption = Annotated[
    bool,
    typer.Option(
        "--insecure", help="accept a BMC certificate that does not verify (and plain http)"
    ),
]
BmcCaFileOption = Annotated[
    Path | None,
    typer.Option("--bmc-ca-file", metavar="FILE", help="the CA that signed the BMC's certificate"),
]
BmcTimeoutOption = Annotated[
    float,
    typer.Option(
        "--bmc-timeout",
        metavar="S",
        min=1.0,
        max=600.0,
        help="the whole BMC reading must finish within this (seconds)",
    ),
]


def _password(user: str) -> str:
    """DLRIG_BMC_PASSWORD, else a prompt on the terminal (never echoed)."""
    from dlrig.errors import ValidationError

    password = os.environ.get(PASSWORD_VARIABLE)
    if password is not None:
        return password
    if not sys.stdin.isatty():
        raise ValidationError(
            f"--bmc-user {user}: no password: set {PASSWORD_VARIABLE} (no terminal to ask on)",
            hint=f"read -rs {PASSWORD_VARIABLE} && export {PASSWORD_VARIABLE}",
        )
    import getpass

    return getpass.getpass(f"BMC password for {user}: ")


def bmc_source(
    bmc: str | None,
    ipmi: str | None,
    user: str | None,
    insecure: bool,
    ca_file: Path | None,
    timeout_s: float,
) -> BmcSource | None:
    """The BMC the options name (None without --bmc or --ipmi); bad options are one line."""
    from dlrig.errors import ValidationError

    if bmc and ipmi:
        raise ValidationError("give one of --bmc (Redfish) and --ipmi, not both")
    if bmc is None and ipmi is None:
        if user is not None:
            raise ValidationError("--bmc-user needs --bmc URL or --ipmi HOST")
        return None
    if ipmi is not None:
        from dlrig.hardware.bmc.ipmi import IpmiOptions, IpmiSource

        if ipmi == "local":
            return IpmiSource(IpmiOptions(None))
        if user is None:
            raise ValidationError(
                f"--ipmi {ipmi}: a remote BMC needs --bmc-user", hint="--bmc-user admin"
            )
        return IpmiSource(IpmiOptions(ipmi, user), _password(user))
    from dlrig.hardware.bmc.redfish import RedfishOptions, RedfishSource, check_bmc_url

    url = check_bmc_url(bmc or "", insecure=insecure)
    if user is None:
        raise ValidationError(
            "--bmc needs --bmc-user USER",
            hint=f"dlrig health --bmc {url} --bmc-user admin ({PASSWORD_VARIABLE} holds the "
            "password)",
        )
    if ca_file is not None and not ca_file.is_file():
        raise ValidationError(f"--bmc-ca-file {ca_file}: no such file")
    options = RedfishOptions(
        url=url,
        user=user,
        insecure=insecure,
        ca_file=None if ca_file is None else str(ca_file),
        budget_s=timeout_s,
    )
    return RedfishSource(options, _password(user))
