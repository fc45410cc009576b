"""Stand-in of agents.sandbox.manifest: the workspace root (entries are not modelled)."""

from __future__ import annotations

from ._model import Model


class Manifest(Model):
    root: str = "/workspace"
