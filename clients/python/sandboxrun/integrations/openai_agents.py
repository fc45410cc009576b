"""A sandboxrun session as an OpenAI Agents SDK sandbox.

``SandboxrunSandboxClient`` is an ``agents.sandbox`` ``BaseSandboxClient``
(openai-agents 0.22) whose sessions are sandboxrun sessions: ``exec`` runs
each command through a skill's exec (its ``allowed-tools`` and the operator
policy judge it), ``read``/``write`` use the session's file API,
``persist_workspace``/``hydrate_workspace`` its tar download and upload, so
the SDK's snapshots (``LocalSnapshotSpec``, ``RemoteSnapshotSpec``) keep a
workspace across ``resume``. The workspace root is ``/workspace``.

Importing this module imports the Agents SDK.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
import uuid
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Optional, Union

try:
    from agents.sandbox.errors import (
        ExecTimeoutError,
        ExecTransportError,
        WorkspaceArchiveReadError,
        WorkspaceArchiveWriteError,
        WorkspaceReadNotFoundError,
        WorkspaceWriteTypeError,
    )
    from agents.sandbox.manifest import Manifest
    from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
    from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
    from agents.sandbox.session.sandbox_session import SandboxSession
    from agents.sandbox.session.sandbox_session_state import SandboxSessionState
    from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
    from agents.sandbox.types import ExecResult, User
except ImportError as e:  # pragma: no cover - the framework is an optional extra
    raise ImportError("sandboxrun.integrations.openai_agents needs openai-agents 0.22: pip install 'sandboxrun[openai-agents]'") from e

from ..client import Client
from ..errors import NotFoundError, RefusedError, SandboxrunError
from ._paths import WORKSPACE, PathError, parent_of, to_rel
from ._session import REFUSED_EXIT, delete_session, make_client, refusal_text, retryable, shell_command, truncation_note

__all__ = [
    "SandboxrunSandboxClient",
    "SandboxrunSandboxClientOptions",
    "SandboxrunSandboxSession",
    "SandboxrunSandboxSessionState",
]


class SandboxrunSandboxClientOptions(BaseSandboxClientOptions):
    """``skill`` (required) names the skill whose allowed-tools judge the
    commands; ``ttl`` is the session's idle lifetime (``"30m"``; default the
    server's); ``exec_timeout_s`` the default of ``exec``; ``keep_on_shutdown``
    keeps the sandboxrun session when the SDK shuts the sandbox down (for a
    ``resume`` that reattaches instead of restoring the snapshot)."""

    type: Literal["sandboxrun"] = "sandboxrun"
    skill: str
    ttl: Optional[str] = None
    exec_timeout_s: Optional[float] = None
    keep_on_shutdown: bool = False


class SandboxrunSandboxSessionState(SandboxSessionState):
    """What ``resume`` needs: the skill and the sandboxrun session's id (no token:
    the client holds it, so a persisted state carries no credential)."""

    type: Literal["sandboxrun"] = "sandboxrun"
    skill: str
    sandboxrun_session: str
    ttl: Optional[str] = None
    exec_timeout_s: Optional[float] = None
    keep_on_shutdown: bool = False


class SandboxrunSandboxSession(BaseSandboxSession):
    """One sandboxrun session as an Agents SDK sandbox session."""

    state: SandboxrunSandboxSessionState

    def __init__(self, *, state: SandboxrunSandboxSessionState, client: Client) -> None:
        self.state = state
        self._client = client

    @classmethod
    def from_state(cls, state: SandboxrunSandboxSessionState, *, client: Client) -> "SandboxrunSandboxSession":
        return cls(state=state, client=client)

    @property
    def sandboxrun_session(self) -> str:
        return self.state.sandboxrun_session

    def _rel(self, path: Union[Path, str]) -> str:
        """The file API's name of a path, absolute or relative to the workspace root."""
        text = str(path)
        if not text.startswith("/"):
            text = str(PurePosixPath(self.state.manifest.root) / text)
        return to_rel(text, self.state.manifest.root)

    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kw)

    # -- commands ----------------------------------------------------------------

    async def _exec_internal(self, *command: Union[str, Path], timeout: Optional[float] = None) -> ExecResult:
        """Run argv as one command line under the skill's allowed-tools.

        ``sh -lc CMD`` (what ``exec(..., shell=True)`` sends) is judged and run
        as CMD. A refused command never runs and answers exit status 126 with
        the reason in stderr; a timeout raises ExecTimeoutError; a server that
        cannot run it, ExecTransportError (retryable when busy or unavailable).
        """
        argv = [str(c) for c in command]
        if len(argv) >= 4 and argv[0] == "sudo" and argv[1] == "-u" and argv[3] == "--":
            raise ExecTransportError(command=argv, retryable=False,
                                     message="sandboxrun runs every command as the sandbox's one unprivileged user: "
                                             "call exec without user=")
        limit = timeout if timeout is not None else self.state.exec_timeout_s
        try:
            res = await self._call(self._client.exec, self.state.skill, shell_command(argv),
                                   session=self.sandboxrun_session, timeout=limit)
        except RefusedError as e:
            return ExecResult(stdout=b"", stderr=(refusal_text(e) + "\n").encode(), exit_code=REFUSED_EXIT)
        except SandboxrunError as e:
            raise ExecTransportError(command=argv, cause=e, message=f"sandboxrun: {e.message}",
                                     retryable=retryable(e)) from e
        if res.timed_out:
            raise ExecTimeoutError(command=argv, timeout_s=limit if limit is not None else res.limits.timeout_s,
                                   context={"stdout": res.stdout, "stderr": res.stderr})
        note = truncation_note(res)
        stderr = res.stderr + (note + "\n" if note else "")
        return ExecResult(stdout=res.stdout.encode(), stderr=stderr.encode(), exit_code=res.exit_code)

    # -- files ---------------------------------------------------------------------

    async def read(self, path: Path, *, user: Union[str, User, None] = None) -> io.IOBase:
        if user is not None:
            raise WorkspaceArchiveReadError(path=Path(path), context={"reason": "sandboxrun has one sandbox user: read without user="})
        try:
            data = await self._call(self._client.get_file, self.sandboxrun_session, self._rel(path))
        except PathError as e:
            raise WorkspaceArchiveReadError(path=Path(path), context={"reason": str(e)}, cause=e) from e
        except NotFoundError as e:
            raise WorkspaceReadNotFoundError(path=Path(path), cause=e) from e
        except SandboxrunError as e:
            raise WorkspaceArchiveReadError(path=Path(path), cause=e, retryable=retryable(e)) from e
        return io.BytesIO(data)

    async def write(self, path: Path, data: io.IOBase, *, user: Union[str, User, None] = None) -> None:
        if user is not None:
            raise WorkspaceArchiveWriteError(path=Path(path), context={"reason": "sandboxrun has one sandbox user: write without user="})
        payload = data.read()
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        if not isinstance(payload, (bytes, bytearray)):
            raise WorkspaceWriteTypeError(path=Path(path), actual_type=type(payload).__name__)
        try:
            await self._call(self._client.put_file, self.sandboxrun_session, self._rel(path), bytes(payload))
        except PathError as e:
            raise WorkspaceArchiveWriteError(path=Path(path), context={"reason": str(e)}, cause=e) from e
        except SandboxrunError as e:
            raise WorkspaceArchiveWriteError(path=Path(path), cause=e, retryable=retryable(e)) from e

    async def rm(self, path: Union[Path, str], *, recursive: bool = False, user: Union[str, User, None] = None) -> None:
        """Remove a file or a link; a folder only with recursive=True."""
        try:
            rel = self._rel(path)
            if not rel:
                raise PathError("invalid_path", "the workspace root itself cannot be removed")
            if not recursive and await self._is_folder(rel):
                raise PathError("invalid_path", f"{path} is a folder: pass recursive=True")
            await self._call(self._client.delete_file, self.sandboxrun_session, rel)
        except NotFoundError as e:
            if not recursive:  # rm -rf of nothing succeeds, as in a shell
                raise WorkspaceArchiveWriteError(path=Path(path), context={"reason": "no such file"}, cause=e) from e
        except (PathError, SandboxrunError) as e:
            raise WorkspaceArchiveWriteError(path=Path(path), context={"reason": str(e)}, cause=e) from e

    async def mkdir(self, path: Union[Path, str], *, parents: bool = False, user: Union[str, User, None] = None) -> None:
        """Make a folder (the file API makes folders from a tar holding just them)."""
        try:
            rel = self._rel(path)
            if not rel:
                return
            if not parents and parent_of(rel) and not await self._is_folder(parent_of(rel)):
                raise PathError("invalid_path", f"the parent of {path} does not exist: pass parents=True")
            await self._call(self._client.put_tar, self.sandboxrun_session, _folder_tar(rel))
        except (PathError, SandboxrunError) as e:
            raise WorkspaceArchiveWriteError(path=Path(path), context={"reason": str(e)}, cause=e) from e

    async def _is_folder(self, rel: str) -> bool:
        try:
            entries = await self._call(self._client.list_files, self.sandboxrun_session, rel)
        except NotFoundError:
            return False
        return not any(e.path == rel and e.type != "dir" for e in entries)

    # -- lifecycle -----------------------------------------------------------------

    async def running(self) -> bool:
        try:
            await self._call(self._client.get_session, self.sandboxrun_session)
        except SandboxrunError:
            return False
        return True

    async def persist_workspace(self) -> io.IOBase:
        """The workspace as a tar with workspace-relative names."""
        try:
            return io.BytesIO(await self._call(self._client.get_tar, self.sandboxrun_session))
        except SandboxrunError as e:
            raise WorkspaceArchiveReadError(path=Path(self.state.manifest.root), cause=e, retryable=retryable(e)) from e

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        """Unpack a tar of workspace-relative files and folders, all or nothing."""
        raw = data.read()
        if not isinstance(raw, (bytes, bytearray)):
            raise WorkspaceWriteTypeError(path=Path(self.state.manifest.root), actual_type=type(raw).__name__)
        try:
            await self._call(self._client.put_tar, self.sandboxrun_session, bytes(raw))
        except SandboxrunError as e:
            raise WorkspaceArchiveWriteError(path=Path(self.state.manifest.root), cause=e, retryable=retryable(e)) from e

    async def _clear_workspace_root_on_resume(self) -> None:
        # Through the file API: no ls or rm needs to be in the skill's allowed-tools.
        entries = await self._call(self._client.list_files, self.sandboxrun_session)
        for e in entries:
            if "/" not in e.path:
                await self._call(self._client.delete_file, self.sandboxrun_session, e.path)

    async def _shutdown_backend(self) -> None:
        if not self.state.keep_on_shutdown:
            await self._call(delete_session, self._client, self.sandboxrun_session)


class SandboxrunSandboxClient(BaseSandboxClient[SandboxrunSandboxClientOptions]):
    """Makes, resumes and deletes sandboxes that are sandboxrun sessions.

    ``client`` is a ``sandboxrun.Client``, else one for ``url``/``token``
    (default ``$SANDBOXRUN_URL``/``$SANDBOXRUN_TOKEN``).
    """

    backend_id = "sandboxrun"

    def __init__(self, client: Optional[Client] = None, *, url: Optional[str] = None, token: Optional[str] = None,
                 instrumentation: Any = None, dependencies: Any = None) -> None:
        self._client = make_client(client, url, token)
        self._instrumentation = instrumentation
        self._dependencies = dependencies

    async def create(
        self,
        *,
        snapshot: Union[SnapshotSpec, SnapshotBase, None] = None,
        manifest: Optional[Manifest] = None,
        options: SandboxrunSandboxClientOptions,
    ) -> SandboxSession:
        if options is None:
            raise ValueError("SandboxrunSandboxClient.create needs options=SandboxrunSandboxClientOptions(skill=...)")
        manifest = manifest if manifest is not None else Manifest()
        self._validate_manifest_for_create(manifest)
        _check_manifest(manifest)
        info = await asyncio.to_thread(self._client.create_session, ttl=options.ttl)
        session_id = uuid.uuid4()
        state = SandboxrunSandboxSessionState(
            session_id=session_id,
            manifest=manifest,
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            skill=options.skill,
            sandboxrun_session=info.id,
            ttl=options.ttl,
            exec_timeout_s=options.exec_timeout_s,
            keep_on_shutdown=options.keep_on_shutdown,
        )
        inner = SandboxrunSandboxSession.from_state(state, client=self._client)
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        """Delete the sandboxrun session; one already gone is no error."""
        inner = getattr(session, "_inner", session)
        if not isinstance(inner, SandboxrunSandboxSession):
            raise TypeError("SandboxrunSandboxClient.delete expects a session this client made")
        await asyncio.to_thread(delete_session, self._client, inner.sandboxrun_session)
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        """Reattach to the state's sandboxrun session while it lives; else make
        a new one, which ``start`` fills from the state's snapshot."""
        if not isinstance(state, SandboxrunSandboxSessionState):
            raise TypeError("SandboxrunSandboxClient.resume expects a SandboxrunSandboxSessionState")
        rebound = getattr(state, "assert_path_grants_rebound", None)
        if callable(rebound):
            rebound()
        _check_manifest(state.manifest)
        try:
            await asyncio.to_thread(self._client.get_session, state.sandboxrun_session)
            reconnected = True
        except NotFoundError:
            info = await asyncio.to_thread(self._client.create_session, ttl=state.ttl)
            state.sandboxrun_session = info.id
            state.workspace_root_ready = False
            reconnected = False
        inner = SandboxrunSandboxSession.from_state(state, client=self._client)
        inner._set_start_state_preserved(reconnected, system=reconnected)
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    def deserialize_session_state(self, payload: dict) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, SandboxrunSandboxSessionState)


def _check_manifest(manifest: Manifest) -> None:
    if str(manifest.root).rstrip("/") != WORKSPACE:
        raise ValueError(f"manifest root {manifest.root!r}: a sandboxrun workspace is {WORKSPACE}; use Manifest(root={WORKSPACE!r})")
    if getattr(manifest, "extra_path_grants", ()):
        raise ValueError("manifest extra_path_grants: sandboxrun mounts no host paths into a sandbox; "
                         "put the files in the workspace instead")


def _folder_tar(rel: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo(rel)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tf.addfile(info)
    return buf.getvalue()
