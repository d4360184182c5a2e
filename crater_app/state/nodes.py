"""/nodes: every node, its capacity and each accelerator with the job holding it."""

from __future__ import annotations

import reflex as rx

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
        found, stop = await self.guarded(nodes.list_nodes)
        if found is None:
            return stop
        self.nodes = [views.node_view(n) for n in found]
        self.loaded = True
        return None
