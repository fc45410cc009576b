"""Stand-in of agents.sandbox.session.sandbox_session_state."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Dict, Optional, Tuple

from .._model import Field, Model
from ..manifest import Manifest
from ..snapshot import SnapshotBase


class SandboxSessionState(Model):
    type: str
    session_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    snapshot: SnapshotBase
    manifest: Manifest
    exposed_ports: Tuple[int, ...] = ()
    snapshot_fingerprint: Optional[str] = None
    workspace_root_ready: bool = False
    _registry: ClassVar[Dict[str, type]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        default = cls._fields.get("type")
        if isinstance(default, str):
            SandboxSessionState._registry[default] = cls

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "session_id" and not isinstance(value, uuid.UUID):
            return uuid.UUID(str(value))
        if name == "snapshot":
            return SnapshotBase.parse(value)
        if name == "manifest":
            return Manifest.model_validate(value)
        if name == "exposed_ports":
            return tuple(value)
        return value

    @classmethod
    def parse(cls, payload: Any) -> "SandboxSessionState":
        if isinstance(payload, SandboxSessionState):
            return payload
        return SandboxSessionState._registry[payload["type"]].model_validate(payload)
