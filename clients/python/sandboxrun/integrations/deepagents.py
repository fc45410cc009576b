"""A sandboxrun session as a LangChain Deep Agents sandbox backend.

``SandboxrunBackend`` implements ``deepagents.backends.protocol.SandboxBackendProtocol``
(deepagents 0.7.x): ``execute`` runs the command through a skill's exec, so the
skill's ``allowed-tools`` and the operator policy judge it; the file tools
(``ls``, ``read``, ``write``, ``edit``, ``delete``, ``grep``, ``glob``,
``upload_files``, ``download_files``) use the session's file API instead of
shell one-liners, so nothing is quoted and the image needs no python3.
Paths are absolute sandbox paths under ``/workspace``, the session's folder.

Importing this module imports deepagents.
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional, Tuple, Union

try:
    from deepagents.backends.protocol import (
        DeleteResult,
        EditResult,
        ExecuteResponse,
        FileDownloadResponse,
        FileUploadResponse,
        GlobResult,
        GrepResult,
        LsResult,
        ReadResult,
        SandboxBackendProtocol,
        WriteResult,
    )
except ImportError as e:  # pragma: no cover - the framework is an optional extra
    raise ImportError("sandboxrun.integrations.deepagents needs deepagents 0.7.x: pip install 'sandboxrun[deepagents]'") from e

from ..client import Client
from ..errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    RefusedError,
    SandboxrunError,
)
from ..session import Session
from ..types import FileEntry
from . import _text
from ._paths import WORKSPACE, Glob, PathError, to_abs, to_rel, under
from ._session import REFUSED_EXIT, Workspace, make_client, refusal_text, truncation_note

__all__ = ["SandboxrunBackend"]


class SandboxrunBackend(SandboxBackendProtocol):
    """A Deep Agents sandbox backed by one sandboxrun session.

    ``skill`` names the skill whose allowed-tools judge ``execute``'s
    commands (its limits, network and image apply too). ``client`` (or
    ``url``/``token``, default ``$SANDBOXRUN_URL``/``$SANDBOXRUN_TOKEN``) is
    the server. ``session`` reuses an existing session, which ``close``
    then leaves alone; otherwise a new one (``ttl``) is made now and deleted
    by ``close`` (or the ``with`` block). ``timeout`` is the default of
    ``execute`` in seconds (None: the skill's, held to the operator's ceiling).
    """

    def __init__(
        self,
        skill: str,
        *,
        client: Optional[Client] = None,
        url: Optional[str] = None,
        token: Optional[str] = None,
        session: Union[str, Session, None] = None,
        ttl: Union[str, float, None] = None,
        timeout: Optional[int] = None,
    ) -> None:
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be 0 or more seconds, got {timeout}")
        self._ws = Workspace(make_client(client, url, token), skill, session, ttl)
        self._default_timeout = timeout

    @property
    def id(self) -> str:
        """The sandboxrun session's id."""
        return self._ws.id

    @property
    def client(self) -> Client:
        return self._ws.client

    def close(self) -> None:
        """Delete the session if this backend made it."""
        self._ws.close()

    def __enter__(self) -> "SandboxrunBackend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- commands ----------------------------------------------------------------

    def execute(self, command: str, *, timeout: Optional[int] = None) -> ExecuteResponse:
        """Run command under the skill's allowed-tools in the session's /workspace.

        ``output`` is stdout then stderr; a command cut by ``timeout`` has exit
        code 124 and says so; output cut at the operator's limit sets
        ``truncated``; a command the policy refuses never runs and answers exit
        code 126 with the reason and the allowed-tools entry it would need.
        ``timeout`` None or 0 is the backend's default, else the skill's timeout;
        every timeout is held to the operator's ceiling (no sandbox runs unbounded).
        """
        if not isinstance(command, str) or not command.strip():
            return ExecuteResponse(output="Error: the command is empty", exit_code=1, truncated=False)
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be 0 or more seconds, got {timeout}")
        if not timeout:
            timeout = self._default_timeout
        try:
            res = self._ws.exec(command, timeout=timeout or None)
        except RefusedError as e:
            return ExecuteResponse(output="Error: " + refusal_text(e), exit_code=REFUSED_EXIT, truncated=False)
        except SandboxrunError as e:
            # The command may not have run at all: no exit code to report.
            return ExecuteResponse(output=f"Error: sandboxrun could not run the command: {e.message}", exit_code=None)
        stdout = res.stdout
        if stdout and res.stderr and not stdout.endswith("\n"):
            stdout += "\n"
        output = stdout + res.stderr
        notes = [truncation_note(res)]
        if res.timed_out:
            limit = res.limits.timeout_s or timeout
            after = f" after {limit:g} seconds" if limit else ""
            notes.append(f"Error: the command timed out{after} (pass a larger timeout for long commands)")
        note = "\n".join(n for n in notes if n)
        if note:
            output = (output.rstrip("\n") + "\n\n" if output else "") + note
        return ExecuteResponse(output=output, exit_code=res.exit_code,
                               truncated=bool(res.stdout_truncated or res.stderr_truncated))

    async def aexecute(self, command: str, *, timeout: Optional[int] = None) -> ExecuteResponse:
        return await asyncio.to_thread(self.execute, command, timeout=timeout)

    # -- files in bulk -------------------------------------------------------------

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        """Write each (path, bytes); folders on the way are made. One answer per file, in order."""
        out = []
        for path, data in files:
            try:
                self.client.put_file(self.id, to_rel(path), bytes(data))
                out.append(FileUploadResponse(path=path, error=None))
            except BadRequestError as e:
                # The server answers 400 both for a bad name and for a folder
                # standing where the file would go: tell them apart.
                out.append(FileUploadResponse(path=path, error="is_directory" if self._is_dir(path) else _code(e)))
            except (PathError, SandboxrunError) as e:
                out.append(FileUploadResponse(path=path, error=_code(e)))
        return out

    async def aupload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        return await asyncio.to_thread(self.upload_files, files)

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        """The bytes of each path, or its error code. One answer per path, in order."""
        out = []
        for path in paths:
            try:
                out.append(FileDownloadResponse(path=path, content=self.client.get_file(self.id, to_rel(path)), error=None))
            except ConflictError:
                out.append(FileDownloadResponse(path=path, content=None, error=self._conflict_code(path)))
            except (PathError, SandboxrunError) as e:
                out.append(FileDownloadResponse(path=path, content=None, error=_code(e)))
        return out

    async def adownload_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        return await asyncio.to_thread(self.download_files, paths)

    def _conflict_code(self, path: str) -> str:
        # 409 is a folder or a link where a file is needed; the file API never
        # follows links, so a link is as unreadable here as a denied file.
        entry = self._stat(to_rel(path))
        return "is_directory" if entry is not None and entry.type == "dir" else "permission_denied"

    def _is_dir(self, path: str) -> bool:
        try:
            entry = self._stat(to_rel(path))
        except (PathError, SandboxrunError):
            return False
        return entry is not None and entry.type == "dir"

    def _stat(self, rel: str) -> Optional[FileEntry]:
        if not rel:
            return FileEntry(path="", type="dir")
        try:
            entries = self.client.list_files(self.id, rel)
        except NotFoundError:
            return None
        for e in entries:
            if e.path == rel:
                return e
        return FileEntry(path=rel, type="dir")  # a folder lists what it holds, not itself

    # -- file tools ----------------------------------------------------------------

    def ls(self, path: str) -> LsResult:
        """The entries directly inside folder path, with size and modification time."""
        try:
            rel = to_rel(path)
            entries = self.client.list_files(self.id, rel or None)
        except NotFoundError:
            return LsResult(error=f"Path '{path}': no such folder")
        except (PathError, SandboxrunError) as e:
            return LsResult(error=f"Path '{path}': {_message(e)}")
        if len(entries) == 1 and entries[0].path == rel and entries[0].type != "dir":
            return LsResult(error=f"Path '{path}': not a folder")
        infos = []
        for e in entries:
            inside = under(e.path, rel)
            if inside is None or not inside or "/" in inside:
                continue
            infos.append({"path": to_abs(e.path), "is_dir": e.type == "dir", "size": e.size, "modified_at": e.modified})
        return LsResult(entries=infos)

    async def als(self, path: str) -> LsResult:
        return await asyncio.to_thread(self.ls, path)

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """Lines offset (0-based) .. offset+limit of a text file; a binary file whole, as base64."""
        try:
            data = self.client.get_file(self.id, to_rel(file_path))
        except NotFoundError:
            return ReadResult(error=f"File '{file_path}': file_not_found")
        except ConflictError:
            return ReadResult(error=f"File '{file_path}': {self._conflict_code(file_path)}")
        except (PathError, SandboxrunError) as e:
            return ReadResult(error=f"File '{file_path}': {_message(e)}")
        p = _text.page(data, offset, limit)
        if p.error:
            return ReadResult(error=f"File '{file_path}': {p.error}")
        if p.no_lines_requested:
            return ReadResult(file_data={"content": "", "encoding": "utf-8"}, no_lines_requested=True)
        return ReadResult(file_data={"content": p.content, "encoding": p.encoding}, total_lines=p.total_lines,
                          start_line=p.start_line, end_line=p.end_line, next_offset=p.next_offset)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await asyncio.to_thread(self.read, file_path, offset, limit)

    def write(self, file_path: str, content: str) -> WriteResult:
        """Create or overwrite file_path with content (UTF-8); folders on the way are made."""
        try:
            self.client.put_file(self.id, to_rel(file_path), content.encode("utf-8"))
        except (PathError, SandboxrunError) as e:
            return WriteResult(error=f"Failed to write file '{file_path}': {_message(e)}")
        return WriteResult(path=file_path)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await asyncio.to_thread(self.write, file_path, content)

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        """Replace old_string by new_string: once (it must then occur once) or everywhere."""
        try:
            rel = to_rel(file_path)
            data = self.client.get_file(self.id, rel)
        except NotFoundError:
            return EditResult(error=f"Error: File '{file_path}' not found")
        except (PathError, SandboxrunError) as e:
            return EditResult(error=f"Error editing file '{file_path}': {_message(e)}")
        text = _text.decode_text(data)
        if text is None:
            return EditResult(error=f"Error: File '{file_path}' is not a text file")
        old, new = old_string, new_string
        count = text.count(old) if old else 0
        if count == 0 and old and "\r\n" in text:
            # read shows CRLF files with LF endings, so the model's old_string
            # has LF ones: match (and write) the file's own endings.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = text.count(old)
        if count == 0:
            return EditResult(error=f"Error: String not found in file: '{old_string}'")
        if count > 1 and not replace_all:
            return EditResult(error=f"Error: String '{old_string}' appears {count} times in the file. "
                                    "Give more context to make it unique, or use replace_all=True.")
        text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        try:
            self.client.put_file(self.id, rel, text.encode("utf-8"))
        except SandboxrunError as e:
            return EditResult(error=f"Error editing file '{file_path}': {_message(e)}")
        return EditResult(path=file_path, occurrences=count)

    async def aedit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        return await asyncio.to_thread(self.edit, file_path, old_string, new_string, replace_all)

    def delete(self, file_path: str) -> DeleteResult:
        """Remove a file, a link (never its target) or a folder with what it holds."""
        try:
            rel = to_rel(file_path)
            if not rel:
                return DeleteResult(error=f"Error: '{file_path}' is the workspace itself; delete what it holds instead")
            self.client.delete_file(self.id, rel)
        except NotFoundError:
            return DeleteResult(error=f"Error: '{file_path}' not found")
        except (PathError, SandboxrunError) as e:
            return DeleteResult(error=f"Error deleting '{file_path}': {_message(e)}")
        return DeleteResult(path=file_path)

    async def adelete(self, file_path: str) -> DeleteResult:
        return await asyncio.to_thread(self.delete, file_path)

    def grep(self, pattern: str, path: Optional[str] = None, glob: Optional[str] = None, *,
             max_count: Optional[int] = None) -> GrepResult:
        """Lines holding pattern literally (no regex), in text files under path
        (default /workspace) whose path matches glob; at most max_count of them.

        The workspace comes in one tar and is searched here, so no grep (and no
        allowed-tools entry for one) is needed in the sandbox.
        """
        root = path or WORKSPACE
        try:
            rel = to_rel(root)
            matches, cut = _text.grep_tar(self.client.get_tar(self.id), pattern, rel, glob, max_count)
        except (PathError, SandboxrunError, ValueError) as e:
            return GrepResult(error=f"Path '{root}': {_message(e)}")
        return GrepResult(matches=[{"path": to_abs(m.rel), "line": m.line, "text": m.text} for m in matches],
                          truncated=cut)

    async def agrep(self, pattern: str, path: Optional[str] = None, glob: Optional[str] = None, *,
                    max_count: Optional[int] = None) -> GrepResult:
        return await asyncio.to_thread(self.grep, pattern, path, glob, max_count=max_count)

    def glob(self, pattern: str, path: Optional[str] = None) -> GlobResult:
        """Regular files under path (default /workspace) whose path relative to it
        matches pattern, as absolute paths, sorted."""
        root = path or WORKSPACE
        try:
            rel = to_rel(root)
            matcher = Glob(pattern)
            entries = self.client.list_files(self.id, rel or None)
        except NotFoundError:
            return GlobResult(error=f"Path '{root}': no such folder")
        except (PathError, SandboxrunError, ValueError) as e:
            return GlobResult(error=f"Path '{root}': {_message(e)}")
        found = []
        for e in entries:
            inside = under(e.path, rel)
            if e.type == "file" and inside and matcher.match(inside):
                found.append({"path": to_abs(e.path), "is_dir": False, "size": e.size, "modified_at": e.modified})
        return GlobResult(matches=sorted(found, key=lambda f: f["path"]))

    async def aglob(self, pattern: str, path: Optional[str] = None) -> GlobResult:
        return await asyncio.to_thread(self.glob, pattern, path)


def _code(err: Exception) -> str:
    """The Deep Agents error code of a failed transfer, else the server's own words."""
    if isinstance(err, PathError):
        return "invalid_path" if err.code == "invalid_path" else "permission_denied"
    if isinstance(err, NotFoundError):
        return "file_not_found"
    if isinstance(err, ConflictError):
        return "is_directory"
    if isinstance(err, RefusedError):
        return "permission_denied"
    if isinstance(err, BadRequestError):
        return "invalid_path"
    return _message(err)


def _message(err: Exception) -> str:
    return err.message if isinstance(err, SandboxrunError) else str(err)

