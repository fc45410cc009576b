"""Stand-in of agents.sandbox.session.sandbox_client: the options base with
its registry by ``type``, and the abstract client."""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Dict, Generic, Mapping, Optional, TypeVar, Union

from .._model import Model
from ..manifest import Manifest
from ..snapshot import SnapshotBase, SnapshotSpec
from .base_sandbox_session import BaseSandboxSession
from .sandbox_session import SandboxSession
from .sandbox_session_state import SandboxSessionState

ClientOptionsT = TypeVar("ClientOptionsT")


class BaseSandboxClientOptions(Model):
    _frozen = True
    type: str
    _registry: ClassVar[Dict[str, type]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        default = cls._fields.get("type")
        if not isinstance(default, str) or not default:
            raise TypeError(f"{cls.__name__} must define a non-empty string default for `type`")
        BaseSandboxClientOptions._registry[default] = cls

    @classmethod
    def parse(cls, payload: Any) -> "BaseSandboxClientOptions":
        if isinstance(payload, BaseSandboxClientOptions):
            return payload
        return BaseSandboxClientOptions._registry[payload["type"]].model_validate(payload)


class BaseSandboxClient(abc.ABC, Generic[ClientOptionsT]):
    backend_id: str
    supports_default_options: bool = False
    _dependencies: Any = None

    def _wrap_session(self, inner: BaseSandboxSession, *, instrumentation: Any = None) -> SandboxSession:
        return SandboxSession(inner, instrumentation=instrumentation, dependencies=self._dependencies)

    def _validate_manifest_for_create(self, manifest: Manifest) -> Manifest:
        return manifest

    @abc.abstractmethod
    async def create(self, *, snapshot: Union[SnapshotSpec, SnapshotBase, None] = None,
                     manifest: Optional[Manifest] = None, options: ClientOptionsT) -> SandboxSession: ...

    @abc.abstractmethod
    async def delete(self, session: SandboxSession) -> SandboxSession: ...

    @abc.abstractmethod
    async def resume(self, state: SandboxSessionState) -> SandboxSession: ...

    def serialize_session_state(self, state: SandboxSessionState) -> Dict[str, object]:
        return state.model_dump(mode="json")

    @staticmethod
    def _deserialize_session_state_payload(payload: Mapping[str, object], state_class: type) -> SandboxSessionState:
        return state_class.model_validate(dict(payload))

    @abc.abstractmethod
    def deserialize_session_state(self, payload: Dict[str, object]) -> SandboxSessionState: ...
