"""The click group every nabench command group uses: errors as one line, not tracebacks."""

from __future__ import annotations

import sys

import click

from nabench.core.errors import NabenchError


class NabenchGroup(click.Group):
    """Turns NabenchError into one readable line and a non-zero exit; --debug shows tracebacks."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except NabenchError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
                err=True,
            )
            sys.exit(3)
