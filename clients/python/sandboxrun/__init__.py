"""sandboxrun: run agent-skill scripts in ephemeral, locked-down containers.

``Client`` talks to a ``sandboxrun serve`` (``SANDBOXRUN_URL``) or, with no
URL, runs the ``sandboxrun`` CLI on this host. ``sandboxrun.skillkit``,
``sandboxrun.tools`` and ``sandboxrun.framework`` are drop-in, sandboxed
versions of the executor interfaces skills code already calls.
"""

from .client import Client, Session
from .errors import (
    AuthError,
    BadParamError,
    BadRequestError,
    BusyError,
    ConflictError,
    InvalidSkillError,
    LocalModeError,
    NotFoundError,
    RedirectError,
    RefusedError,
    SandboxrunError,
    ServerError,
    RequestTimeoutError,
    TooLargeError,
    TransportError,
    UnavailableError,
    UnsupportedMediaError,
)
from .types import (
    Activation,
    AllowedTool,
    Event,
    Explanation,
    FileChange,
    FileEntry,
    Limits,
    Result,
    SessionInfo,
    Snapshot,
    SkillSummary,
    SkillVersion,
    StoredFile,
    Usage,
    UsageFigures,
    UsageLimits,
    UsageWindow,
)

__version__ = "0.1.0"

__all__ = [
    "Activation",
    "AllowedTool",
    "AuthError",
    "BadParamError",
    "BadRequestError",
    "BusyError",
    "Client",
    "ConflictError",
    "InvalidSkillError",
    "Event",
    "Explanation",
    "FileChange",
    "FileEntry",
    "Limits",
    "LocalModeError",
    "NotFoundError",
    "RedirectError",
    "RefusedError",
    "Result",
    "SandboxrunError",
    "ServerError",
    "Session",
    "SessionInfo",
    "Snapshot",
    "SkillSummary",
    "SkillVersion",
    "StoredFile",
    "RequestTimeoutError",
    "TooLargeError",
    "TransportError",
    "UnavailableError",
    "UnsupportedMediaError",
    "Usage",
    "UsageFigures",
    "UsageLimits",
    "UsageWindow",
]
