"""The argument parser every subcommand uses, and checked argument types.

Errors become `UsageError` (one line, exit status 2) instead of argparse's
usage text and `SystemExit`, so that every bad argument is reported the same
way and is found before anything is written.
"""

from __future__ import annotations

import argparse
import math
import re

from .errors import UsageError

__all__ = ["Parser", "positive_int", "non_negative_int", "positive_float"]


_LONG_OPTION = re.compile(r"--[A-Za-z]")


class Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors raise `UsageError` (one line, status 2).

    With `dashed_positionals` set, a word starting with `-` that is not one of the
    parser's options is a positional (`retrograd graph "-a*b"`), not an unknown
    flag; words like `--name` are still taken as options, so a misspelt flag is
    reported as one.
    """

    dashed_positionals = False

    def error(self, message: str):
        raise UsageError(message)

    def _parse_optional(self, arg_string: str):
        if self.dashed_positionals and arg_string.startswith("-") and arg_string != "--" \
                and not _LONG_OPTION.match(arg_string) \
                and arg_string not in self._option_string_actions:
            return None
        return super()._parse_optional(arg_string)


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (epochs, batch sizes)."""
    value = _int(text, "a positive integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (seeds)."""
    value = _int(text, "a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (learning rates): 'inf' and 'nan' are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return value
