"""What a subcommand raises to stop with a one-line message instead of a traceback."""

from __future__ import annotations

__all__ = ["UsageError", "CommandFailed"]


class UsageError(Exception):
    """A bad argument: reported on one line, exit status 2, and nothing written."""


class CommandFailed(Exception):
    """The command ran but could not finish (e.g. training diverged): one line, status 1."""
