"""The typer application class every dlrig command hangs on: plain help (no boxes, choices
never cut mid-word, no `<bool>` placeholders) and a refusal of a one-value option given twice
(`--workload a --workload b` on estimate used to keep the last without a word).

A command registered with `app.command(...)` on a `DlrigTyper` gets both.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import typer
from typer.core import TyperCommand


class DlrigCommand(TyperCommand):
    """A command whose options that take one value refuse to be given more than once, and
    whose help names each value by a placeholder (an option's own metavar, else its type in
    words: TEXT, N, NUMBER, PATH, or its choices)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        for param in self.params:
            _name_placeholder(param, ctx)
        super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                _name_placeholder(param, ctx)
                name = f"{param.metavar}..." if param.nargs != 1 else str(param.metavar)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        given = Counter(p for p in order if _takes_one_value(p))
        for param, times in given.items():
            if times > 1:
                from dlrig.errors import ValidationError

                option = max(param.opts, key=len)
                raise ValidationError(
                    f"{option} is given {times} times; {ctx.command_path} takes one",
                    hint="options marked (repeat) in -h are the ones to repeat",
                )
        result: list[str] = super().parse_args(ctx, args)
        return result


# typer's type names, as a placeholder says them.
_PLACEHOLDERS = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH", "Path": "PATH"}


def _name_placeholder(param: Any, ctx: Any) -> None:
    """Give a parameter without a metavar one from its type (typer would print `<list[str]>`
    or `<float range>`); an argument's listing shows its placeholder alone, not its type."""
    if param.param_type_name == "argument":
        param.metavar = param.metavar or param.name.upper()
        param.display_type_rich = lambda ctx: None  # the placeholder says it
        return
    if param.metavar is not None or getattr(param, "is_flag", False):
        return
    label = str(param.display_type(ctx)).strip("<>")
    label = label.removeprefix("list[").removesuffix("]").removesuffix(" range")
    param.metavar = f"[{label}]" if "|" in label else _PLACEHOLDERS.get(label, label.upper())


def _takes_one_value(param: Any) -> bool:
    """An option with one value (repeating a flag changes nothing, so flags may repeat)."""
    return (
        param.param_type_name == "option"
        and not param.multiple
        and not getattr(param, "is_flag", False)
        and not getattr(param, "count", False)
    )


class DlrigTyper(typer.Typer):
    """typer.Typer with plain help and DlrigCommand as every command's class."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("rich_markup_mode", None)
        kwargs.setdefault("pretty_exceptions_enable", False)
        kwargs.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", DlrigCommand)
        return super().command(*args, **kwargs)
