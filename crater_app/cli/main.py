"""The ``crater`` command (typer). ``crater init`` prepares a data folder: migrate + first admin."""

from __future__ import annotations

import typer
from rich.console import Console

from crater_app.bootstrap import build_context
from crater_app.domain.errors import CraterError
from crater_app.settings import get_settings

app = typer.Typer(help="Crater: a control plane for shared GPU clusters.", no_args_is_help=True)
console = Console()


@app.callback()
def main() -> None:
    """Crater command line."""


@app.command()
def init() -> None:
    """Migrate the database to the newest schema and create the first admin (user ``admin``).

    The password is ``CRATER_ADMIN_PASSWORD``; when unset, a random one is generated and printed once.
    """
    from crater_app.services.users import ADMIN_USERNAME, ensure_admin

    settings = get_settings()
    try:
        ctx = build_context(settings)
        inventory = ctx.backend.inventory()
        generated = ensure_admin(ctx, settings.admin_password or None)
    except CraterError as exc:
        console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(2) from None
    console.print(f"database: {settings.resolved_database_url.split('@')[-1]} (migrated)")
    for node in inventory:
        models = ", ".join(sorted({d.model for d in node.devices})) or "no accelerators"
        console.print(f"node {node.name}: {node.cpu_m // 1000} CPUs, {len(node.devices)} × GPU ({models}) from {node.source}")
    if generated:
        console.print(f"[bold]first admin created[/bold]: user '{ADMIN_USERNAME}', password [bold]{generated}[/bold] (shown once)")
    elif settings.admin_password:
        console.print(f"admin user '{ADMIN_USERNAME}' ready (password from CRATER_ADMIN_PASSWORD)")


if __name__ == "__main__":
    app()
