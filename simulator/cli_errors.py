"""How the ``simulate`` command tells the user what went wrong: one line on stderr.

An error stops the command with exit status 2 and no traceback; a warning
does not stop it.
"""

from __future__ import annotations

from typing import IO, Any

import click


class CLIError(click.ClickException):
    """A user error: one line, exit status 2, no traceback."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"simulate: error: {self.format_message()}", err=True, file=file)


def warn(message: str) -> None:
    """One line on stderr that does not stop the command."""
    click.echo(f"simulate: warning: {message}", err=True)
