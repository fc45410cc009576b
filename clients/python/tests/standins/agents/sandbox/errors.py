"""Stand-in of agents.sandbox.errors: the error codes and the classes a
provider raises, with the real constructors' keyword arguments."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence


class ErrorCode(str, Enum):
    EXEC_NONZERO = "exec_nonzero"
    EXEC_TIMEOUT = "exec_timeout"
    EXEC_TRANSPORT_ERROR = "exec_transport_error"
    WORKSPACE_READ_NOT_FOUND = "workspace_read_not_found"
    WORKSPACE_ARCHIVE_READ_ERROR = "workspace_archive_read_error"
    WORKSPACE_ARCHIVE_WRITE_ERROR = "workspace_archive_write_error"
    WORKSPACE_WRITE_TYPE_ERROR = "workspace_write_type_error"
    SNAPSHOT_RESTORE_ERROR = "snapshot_restore_error"


class SandboxError(Exception):
    def __init__(self, *, message: str, error_code: ErrorCode, op: str, context: Optional[Mapping[str, Any]] = None,
                 cause: Optional[BaseException] = None, retryable: Optional[bool] = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.op = op
        self.context = dict(context or {})
        self.cause = cause
        self.retryable = retryable
        if cause is not None:
            self.__cause__ = cause


class ExecFailureError(SandboxError):
    def __init__(self, *, message: str, error_code: ErrorCode, command: Sequence[Any],
                 context: Optional[Mapping[str, Any]] = None, cause: Optional[BaseException] = None,
                 retryable: Optional[bool] = None) -> None:
        self.command = tuple(str(c) for c in command)
        super().__init__(message=message, error_code=error_code, op="exec",
                         context={"command": self.command, **dict(context or {})}, cause=cause, retryable=retryable)


class ExecNonZeroError(ExecFailureError):
    def __init__(self, exec_result: Any, *, command: Sequence[Any], context: Optional[Mapping[str, Any]] = None,
                 cause: Optional[BaseException] = None) -> None:
        self.exit_code = exec_result.exit_code
        self.stdout = exec_result.stdout
        self.stderr = exec_result.stderr
        super().__init__(message=f"command exited with code {exec_result.exit_code}", error_code=ErrorCode.EXEC_NONZERO,
                         command=command, context=context, cause=cause, retryable=False)


class ExecTimeoutError(ExecFailureError):
    def __init__(self, *, command: Sequence[Any], timeout_s: Optional[float], context: Optional[Mapping[str, Any]] = None,
                 cause: Optional[BaseException] = None) -> None:
        self.timeout_s = timeout_s
        super().__init__(message="command timed out", error_code=ErrorCode.EXEC_TIMEOUT, command=command,
                         context={"timeout_s": timeout_s, **dict(context or {})}, cause=cause, retryable=False)


class ExecTransportError(ExecFailureError):
    def __init__(self, *, command: Sequence[Any], context: Optional[Mapping[str, Any]] = None,
                 cause: Optional[BaseException] = None, message: Optional[str] = None,
                 retryable: Optional[bool] = None) -> None:
        super().__init__(message=message or "exec transport error", error_code=ErrorCode.EXEC_TRANSPORT_ERROR,
                         command=command, context=context, cause=cause, retryable=retryable)


class WorkspaceIOError(SandboxError):
    pass


class WorkspaceReadNotFoundError(WorkspaceIOError):
    def __init__(self, *, path: Path, context: Optional[Mapping[str, Any]] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message=f"file not found: {path}", error_code=ErrorCode.WORKSPACE_READ_NOT_FOUND, op="read",
                         context={"path": str(path), **dict(context or {})}, cause=cause, retryable=False)


class WorkspaceArchiveReadError(WorkspaceIOError):
    def __init__(self, *, path: Path, context: Optional[Mapping[str, Any]] = None, cause: Optional[BaseException] = None,
                 retryable: Optional[bool] = None) -> None:
        super().__init__(message=f"failed to read archive for path: {path}", error_code=ErrorCode.WORKSPACE_ARCHIVE_READ_ERROR,
                         op="read", context={"path": str(path), **dict(context or {})}, cause=cause, retryable=retryable)


class WorkspaceArchiveWriteError(WorkspaceIOError):
    def __init__(self, *, path: Path, context: Optional[Mapping[str, Any]] = None, cause: Optional[BaseException] = None,
                 retryable: Optional[bool] = None) -> None:
        super().__init__(message=f"failed to write archive for path: {path}", error_code=ErrorCode.WORKSPACE_ARCHIVE_WRITE_ERROR,
                         op="write", context={"path": str(path), **dict(context or {})}, cause=cause, retryable=retryable)


class WorkspaceWriteTypeError(WorkspaceIOError):
    def __init__(self, *, path: Path, actual_type: str, context: Optional[Mapping[str, Any]] = None,
                 cause: Optional[BaseException] = None) -> None:
        super().__init__(message="write() expects a binary file-like object", error_code=ErrorCode.WORKSPACE_WRITE_TYPE_ERROR,
                         op="write", context={"path": str(path), "actual_type": actual_type, **dict(context or {})},
                         cause=cause, retryable=False)
