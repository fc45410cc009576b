"""Stand-in of agents.sandbox (openai-agents 0.22): what a sandbox provider
subclasses and raises. See tests/standins/README.md."""

from .errors import (
    ErrorCode,
    ExecTimeoutError,
    ExecTransportError,
    SandboxError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
    WorkspaceWriteTypeError,
)
from .manifest import Manifest
from .snapshot import LocalSnapshot, LocalSnapshotSpec, SnapshotSpec, resolve_snapshot
from .types import ExecResult, User

__all__ = [
    "ErrorCode",
    "ExecResult",
    "ExecTimeoutError",
    "ExecTransportError",
    "LocalSnapshot",
    "LocalSnapshotSpec",
    "Manifest",
    "SandboxError",
    "SnapshotSpec",
    "User",
    "WorkspaceArchiveReadError",
    "WorkspaceArchiveWriteError",
    "WorkspaceReadNotFoundError",
    "WorkspaceWriteTypeError",
    "resolve_snapshot",
]
