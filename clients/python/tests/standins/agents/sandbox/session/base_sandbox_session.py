"""Stand-in of agents.sandbox.session.base_sandbox_session.

The lifecycle that calls a provider's hooks, reduced to what decides which
hooks run: start restores a restorable snapshot into a workspace that was not
preserved (clear, then hydrate), stop persists the workspace into the
snapshot, shutdown tears the backend down, aclose does both; exec wraps a
command in ``sh -lc`` unless ``shell=False``.
"""

from __future__ import annotations

import abc
import io
import shlex
from pathlib import Path
from typing import Any, List, Optional, Union

from ..errors import ExecNonZeroError
from ..snapshot import NoopSnapshot
from ..types import ExecResult, User
from .sandbox_session_state import SandboxSessionState


class BaseSandboxSession(abc.ABC):
    state: SandboxSessionState
    _dependencies: Any = None
    _start_workspace_state_preserved: bool = False
    _start_system_state_preserved: bool = False

    async def start(self) -> None:
        await self._ensure_backend_started()
        await self._prepare_backend_workspace()
        preserved = self._start_workspace_state_preserved and self.state.workspace_root_ready
        if await self.state.snapshot.restorable(dependencies=self._dependencies) and not preserved:
            await self._restore_snapshot_into_workspace_on_resume()
        self.state.workspace_root_ready = True

    async def _ensure_backend_started(self) -> None:
        return None

    async def _prepare_backend_workspace(self) -> None:
        return None

    async def _restore_snapshot_into_workspace_on_resume(self) -> None:
        await self._clear_workspace_root_on_resume()
        data = await self.state.snapshot.restore(dependencies=self._dependencies)
        try:
            await self.hydrate_workspace(data)
        finally:
            data.close()

    async def _clear_workspace_root_on_resume(self) -> None:
        # Upstream lists the root with ls -la and removes each entry with rm;
        # the stand-in does not model ls, so a provider that keeps a workspace
        # across resumes must clear it itself.
        raise NotImplementedError("stand-in: the provider must clear its workspace root")

    def _set_start_state_preserved(self, workspace: bool, *, system: Optional[bool] = None) -> None:
        self._start_workspace_state_preserved = workspace
        self._start_system_state_preserved = workspace if system is None else system

    async def stop(self) -> None:
        if isinstance(self.state.snapshot, NoopSnapshot):
            return
        data = await self.persist_workspace()
        try:
            await self.state.snapshot.persist(data, dependencies=self._dependencies)
        finally:
            data.close()

    async def shutdown(self) -> None:
        await self._shutdown_backend()

    async def _shutdown_backend(self) -> None:
        return None

    async def aclose(self) -> None:
        try:
            await self.stop()
        finally:
            await self.shutdown()

    async def __aenter__(self) -> "BaseSandboxSession":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def set_dependencies(self, dependencies: Any) -> None:
        self._dependencies = dependencies

    async def exec(self, *command: Union[str, Path], timeout: Optional[float] = None,
                   shell: Union[bool, List[str]] = True, user: Union[str, User, None] = None) -> ExecResult:
        return await self._exec_internal(*self._prepare_exec_command(*command, shell=shell, user=user), timeout=timeout)

    def _prepare_exec_command(self, *command: Union[str, Path], shell: Union[bool, List[str]],
                              user: Union[str, User, None]) -> List[str]:
        argv = [str(c) for c in command]
        if shell:
            joined = argv[0] if len(argv) == 1 else shlex.join(argv)
            argv = (shell + [joined]) if isinstance(shell, list) else ["sh", "-lc", joined]
        if user:
            argv = ["sudo", "-u", user.name if isinstance(user, User) else user, "--"] + argv
        return argv

    async def rm(self, path: Union[Path, str], *, recursive: bool = False, user: Union[str, User, None] = None) -> None:
        cmd = ["rm"] + (["-rf"] if recursive else []) + ["--", str(path)]
        result = await self.exec(*cmd, shell=False, user=user)
        if not result.ok():
            raise ExecNonZeroError(result, command=cmd)

    async def mkdir(self, path: Union[Path, str], *, parents: bool = False, user: Union[str, User, None] = None) -> None:
        cmd = ["mkdir"] + (["-p"] if parents else []) + [str(path)]
        result = await self.exec(*cmd, shell=False, user=user)
        if not result.ok():
            raise ExecNonZeroError(result, command=cmd)

    @abc.abstractmethod
    async def _exec_internal(self, *command: Union[str, Path], timeout: Optional[float] = None) -> ExecResult: ...

    @abc.abstractmethod
    async def read(self, path: Path, *, user: Union[str, User, None] = None) -> io.IOBase: ...

    @abc.abstractmethod
    async def write(self, path: Path, data: io.IOBase, *, user: Union[str, User, None] = None) -> None: ...

    @abc.abstractmethod
    async def running(self) -> bool: ...

    @abc.abstractmethod
    async def persist_workspace(self) -> io.IOBase: ...

    @abc.abstractmethod
    async def hydrate_workspace(self, data: io.IOBase) -> None: ...
