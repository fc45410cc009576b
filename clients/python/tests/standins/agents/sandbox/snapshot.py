"""Stand-in of agents.sandbox.snapshot: where a session's workspace tar is kept."""

from __future__ import annotations

import abc
import io
from pathlib import Path
from typing import Any, ClassVar, Dict, Union

from ._model import Model


class SnapshotBase(Model, abc.ABC):
    type: str
    id: str
    _registry: ClassVar[Dict[str, type]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        default = cls._fields.get("type")
        if isinstance(default, str):
            SnapshotBase._registry[default] = cls

    @classmethod
    def parse(cls, payload: Any) -> "SnapshotBase":
        if isinstance(payload, SnapshotBase):
            return payload
        return SnapshotBase._registry[payload["type"]].model_validate(payload)

    @abc.abstractmethod
    async def persist(self, data: io.IOBase, *, dependencies: Any = None) -> None: ...

    @abc.abstractmethod
    async def restore(self, *, dependencies: Any = None) -> io.IOBase: ...

    @abc.abstractmethod
    async def restorable(self, *, dependencies: Any = None) -> bool: ...


class LocalSnapshot(SnapshotBase):
    type: str = "local"
    base_path: Path

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        return Path(value) if name == "base_path" else value

    def _path(self) -> Path:
        return Path(self.base_path) / f"{self.id}.tar"

    async def persist(self, data: io.IOBase, *, dependencies: Any = None) -> None:
        self._path().parent.mkdir(parents=True, exist_ok=True)
        self._path().write_bytes(data.read())

    async def restore(self, *, dependencies: Any = None) -> io.IOBase:
        return self._path().open("rb")

    async def restorable(self, *, dependencies: Any = None) -> bool:
        return self._path().is_file()


class NoopSnapshot(SnapshotBase):
    type: str = "noop"

    async def persist(self, data: io.IOBase, *, dependencies: Any = None) -> None:
        return None

    async def restore(self, *, dependencies: Any = None) -> io.IOBase:
        raise RuntimeError("a noop snapshot holds nothing to restore")

    async def restorable(self, *, dependencies: Any = None) -> bool:
        return False


class SnapshotSpec(Model, abc.ABC):
    @abc.abstractmethod
    def build(self, snapshot_id: str) -> SnapshotBase: ...


class LocalSnapshotSpec(SnapshotSpec):
    type: str = "local"
    base_path: Path

    def build(self, snapshot_id: str) -> SnapshotBase:
        return LocalSnapshot(id=snapshot_id, base_path=self.base_path)


class NoopSnapshotSpec(SnapshotSpec):
    type: str = "noop"

    def build(self, snapshot_id: str) -> SnapshotBase:
        return NoopSnapshot(id=snapshot_id)


def resolve_snapshot(spec: Union[SnapshotBase, SnapshotSpec, None], snapshot_id: str) -> SnapshotBase:
    if isinstance(spec, SnapshotBase):
        return spec
    return (spec if spec is not None else NoopSnapshotSpec()).build(snapshot_id)


