"""The command line: parse, call the core, render. Nothing else lives here.

Each command sits in `dlrig/commands/<name>.py` and is registered below; their modules import
the core lazily inside the command so that `dlrig --help` stays instant.
"""

from __future__ import annotations

import io
import sys
from typing import Annotated

import typer

from dlrig.commands import catalog as catalog_cmd
from dlrig.commands import check as check_cmd
from dlrig.commands import compare as compare_cmd
from dlrig.commands import estimate as estimate_cmd
from dlrig.commands import health as health_cmd
from dlrig.commands import plan as plan_cmd
from dlrig.commands import probe as probe_cmd
from dlrig.commands import schema as schema_cmd
from dlrig.commands import upgrade as upgrade_cmd
from dlrig.commands import watch as watch_cmd
from dlrig.commands import workloads as workloads_cmd
from dlrig.commands.app import DlrigTyper
from dlrig.errors import DlrigError

app = DlrigTyper(
    name="dlrig",
    help="The deep-learning hardware guide as software: plan, check, estimate, probe, watch.",
    no_args_is_help=True,
)

# In the order a user meets them: buy, verify, predict, improve, measure, observe, look up.
app.command("plan")(plan_cmd.plan)
app.command("check")(check_cmd.check)
app.command("estimate")(estimate_cmd.estimate)
app.command("compare")(compare_cmd.compare)
app.command("upgrade")(upgrade_cmd.upgrade)
app.command("probe")(probe_cmd.probe)
app.command("watch", context_settings=watch_cmd.CONTEXT_SETTINGS)(watch_cmd.watch)
app.command("health")(health_cmd.health)
app.add_typer(catalog_cmd.app, name="catalog")
app.command("workloads")(workloads_cmd.workloads)
app.command("schema")(schema_cmd.schema)


def _print_version(value: bool) -> None:
    if value:
        from dlrig import __version__

        sys.stdout.write(f"dlrig {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """The deep-learning hardware guide as software: plan, check, estimate, probe, watch."""


def main() -> None:
    """Entry point of the `dlrig` script: every error, dlrig's own and a usage error alike,
    becomes one line on stderr (and a hint), exit code 2; a command's own code passes through.
    """
    # Typer's own exception types (it vendors click): usage errors are rendered here, as one
    # line, instead of in its multi-line box.
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    from dlrig.report.console import page_to_stdout

    page_to_stdout(False)  # a process may run main() more than once (the tests do)
    _tolerate_narrow_encodings()
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:  # the help is already printed
        sys.exit(exc.exit_code)
    except ClickException as exc:
        _fail(exc.format_message(), _usage_hint(exc), exc.exit_code)
    except DlrigError as exc:
        _fail(str(exc), exc.hint, exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _fail("interrupted", None, 130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _tolerate_narrow_encodings() -> None:
    """On a stdout or stderr that cannot encode a name (PYTHONIOENCODING=ascii, a Latin-1
    terminal), print '?' for the character instead of failing with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="replace")


def _usage_hint(exc: Exception) -> str:
    """Where the usage of the command that failed is shown."""
    ctx = getattr(exc, "ctx", None)
    path: list[str] = []
    # The root's name is how dlrig was started ("python -m dlrig" too): name the subcommands.
    while ctx is not None and ctx.parent is not None:
        path.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["dlrig", *path, "-h"]) + " shows the usage"


def _fail(message: str, hint: str | None, code: int) -> None:
    """One line (and a hint): control and bidirectional characters from the input are shown
    escaped, so that neither a line break nor a right-to-left override reaches the terminal."""
    from dlrig.io.characters import escaped

    sys.stderr.write(f"dlrig: error: {escaped(message)}\n")
    if hint:
        sys.stderr.write(f"  hint: {escaped(hint)}\n")
    sys.exit(code)
