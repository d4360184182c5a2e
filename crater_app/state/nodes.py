"""/nodes: every node, its capacity and each accelerator with the job holding it."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.services import nodes
from crater_app.state import views
from crater_app.state.base import AppState


class NodesState(AppState):
    """Node inventory (read on load and on the refresh button)."""

    nodes: list[views.NodeView] = []
    error: str = ""
    loaded: bool = False

    @rx.event
    async def load(self):
        """Read the nodes."""
        self.error = ""
        try:
            found = await self.call(nodes.list_nodes)
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.error = exc.message
            return None
        self.nodes = [views.node_view(n) for n in found]
        self.loaded = True
        return None
