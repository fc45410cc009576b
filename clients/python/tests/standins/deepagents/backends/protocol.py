"""Stand-in of deepagents.backends.protocol (deepagents 0.7.x): the result
dataclasses, the TypedDicts and the two protocols with their async defaults."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass
from typing import List, Literal, Optional, Tuple, TypedDict

FileOperationError = Literal["file_not_found", "permission_denied", "is_directory", "invalid_path"]


@dataclass
class FileDownloadResponse:
    path: str
    content: Optional[bytes] = None
    error: Optional[str] = None


@dataclass
class FileUploadResponse:
    path: str
    error: Optional[str] = None


class FileInfo(TypedDict, total=False):
    path: str
    is_dir: bool
    size: int
    modified_at: str


class GrepMatch(TypedDict):
    path: str
    line: int
    text: str


class FileData(TypedDict):
    content: str
    encoding: str


@dataclass
class ReadResult:
    error: Optional[str] = None
    file_data: Optional[FileData] = None
    total_lines: Optional[int] = None
    start_line: Optional[int] = None
    end_line: Optional[int] = None
    next_offset: Optional[int] = None
    no_lines_requested: bool = False

    def __post_init__(self) -> None:
        # The real class refuses inconsistent windows the same way.
        if (self.start_line is None) != (self.end_line is None):
            raise ValueError("start_line and end_line go together")
        if self.next_offset is not None and self.next_offset != self.end_line:
            raise ValueError("next_offset must equal end_line")
        if self.start_line is not None and (self.start_line < 1 or self.end_line < self.start_line):
            raise ValueError("window must satisfy 1 <= start_line <= end_line")
        if self.total_lines is not None and (self.start_line is None or self.total_lines < self.end_line):
            raise ValueError("total_lines needs a window it covers")


@dataclass
class WriteResult:
    error: Optional[str] = None
    path: Optional[str] = None


@dataclass
class EditResult:
    error: Optional[str] = None
    path: Optional[str] = None
    occurrences: Optional[int] = None


@dataclass
class DeleteResult:
    error: Optional[str] = None
    path: Optional[str] = None


@dataclass
class LsResult:
    error: Optional[str] = None
    entries: Optional[List[FileInfo]] = None


@dataclass
class GrepResult:
    error: Optional[str] = None
    matches: Optional[List[GrepMatch]] = None
    truncated: bool = False


@dataclass
class GlobResult:
    error: Optional[str] = None
    matches: Optional[List[FileInfo]] = None
    truncated: bool = False


@dataclass
class ExecuteResponse:
    output: str
    exit_code: Optional[int] = None
    truncated: bool = False


class BackendProtocol(abc.ABC):  # noqa: B024 - as upstream, no abstract methods
    def ls(self, path: str) -> LsResult:
        raise NotImplementedError

    async def als(self, path: str) -> LsResult:
        return await asyncio.to_thread(self.ls, path)

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        raise NotImplementedError

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await asyncio.to_thread(self.read, file_path, offset, limit)

    def grep(self, pattern: str, path: Optional[str] = None, glob: Optional[str] = None, *,
             max_count: Optional[int] = None) -> GrepResult:
        raise NotImplementedError

    async def agrep(self, pattern: str, path: Optional[str] = None, glob: Optional[str] = None, *,
                    max_count: Optional[int] = None) -> GrepResult:
        return await asyncio.to_thread(self.grep, pattern, path, glob, max_count=max_count)

    def glob(self, pattern: str, path: Optional[str] = None) -> GlobResult:
        raise NotImplementedError

    async def aglob(self, pattern: str, path: Optional[str] = None) -> GlobResult:
        return await asyncio.to_thread(self.glob, pattern, path)

    def write(self, file_path: str, content: str) -> WriteResult:
        raise NotImplementedError

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await asyncio.to_thread(self.write, file_path, content)

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        raise NotImplementedError

    async def aedit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:
        return await asyncio.to_thread(self.edit, file_path, old_string, new_string, replace_all)

    def delete(self, file_path: str) -> DeleteResult:
        raise NotImplementedError

    async def adelete(self, file_path: str) -> DeleteResult:
        return await asyncio.to_thread(self.delete, file_path)

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        raise NotImplementedError

    async def aupload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        return await asyncio.to_thread(self.upload_files, files)

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        raise NotImplementedError

    async def adownload_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        return await asyncio.to_thread(self.download_files, paths)


class SandboxBackendProtocol(BackendProtocol):
    @property
    def id(self) -> str:
        raise NotImplementedError

    def execute(self, command: str, *, timeout: Optional[int] = None) -> ExecuteResponse:
        raise NotImplementedError

    async def aexecute(self, command: str, *, timeout: Optional[int] = None) -> ExecuteResponse:
        return await asyncio.to_thread(self.execute, command, timeout=timeout)


