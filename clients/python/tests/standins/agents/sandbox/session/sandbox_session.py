"""Stand-in of agents.sandbox.session.sandbox_session: the wrapper every
client returns around its provider's session (upstream adds events and
tracing; this one only forwards)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, List, Optional, Union

from ..types import ExecResult, User
from .base_sandbox_session import BaseSandboxSession
from .sandbox_session_state import SandboxSessionState


class SandboxSession(BaseSandboxSession):
    def __init__(self, inner: BaseSandboxSession, *, instrumentation: Any = None, dependencies: Any = None) -> None:
        self._inner = inner
        self._inner.set_dependencies(dependencies)

    @property
    def state(self) -> SandboxSessionState:  # type: ignore[override]
        return self._inner.state

    async def start(self) -> None:
        await self._inner.start()

    async def stop(self) -> None:
        await self._inner.stop()

    async def shutdown(self) -> None:
        await self._inner.shutdown()

    async def exec(self, *command: Union[str, Path], timeout: Optional[float] = None,
                   shell: Union[bool, List[str]] = True, user: Union[str, User, None] = None) -> ExecResult:
        return await self._inner.exec(*command, timeout=timeout, shell=shell, user=user)

    async def _exec_internal(self, *command: Union[str, Path], timeout: Optional[float] = None) -> ExecResult:
        return await self._inner._exec_internal(*command, timeout=timeout)

    async def read(self, path: Path, *, user: Union[str, User, None] = None) -> io.IOBase:
        return await self._inner.read(path, user=user)

    async def write(self, path: Path, data: io.IOBase, *, user: Union[str, User, None] = None) -> None:
        await self._inner.write(path, data, user=user)

    async def running(self) -> bool:
        return await self._inner.running()

    async def persist_workspace(self) -> io.IOBase:
        return await self._inner.persist_workspace()

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        await self._inner.hydrate_workspace(data)

    async def rm(self, path: Union[Path, str], *, recursive: bool = False, user: Union[str, User, None] = None) -> None:
        await self._inner.rm(path, recursive=recursive, user=user)

    async def mkdir(self, path: Union[Path, str], *, parents: bool = False, user: Union[str, User, None] = None) -> None:
        await self._inner.mkdir(path, parents=parents, user=user)
