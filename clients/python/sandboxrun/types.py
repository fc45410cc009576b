"""The API's documents as dataclasses, with the JSON field names.

Every class is built with ``from_json``: known fields are set, fields this
version of the client does not know are kept in ``extra`` rather than
dropped, so a newer server never breaks an older client.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def _build(cls: Type[T], data: Any, nested: Optional[Dict[str, Any]] = None) -> T:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
    nested = nested or {}
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in names or key == "extra":
            extra[key] = value
            continue
        conv = nested.get(key)
        if conv is not None and value is not None:
            value = [conv(v) for v in value] if isinstance(value, list) else conv(value)
        kw[key] = value
    if "extra" in names:
        kw["extra"] = extra
    return cls(**kw)


@dataclass
class Limits:
    """The effective limits of a run, after defaults and the operator's ceilings."""

    timeout_s: float = 0.0
    memory_bytes: int = 0
    cpus: float = 0.0
    pids: int = 0
    output_bytes: int = 0
    tmp_bytes: int = 0
    workspace_write_bytes: int = 0
    network: bool = False
    sources: Dict[str, str] = field(default_factory=dict)
    clamped: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Limits":
        return _build(cls, data)


@dataclass
class FileChange:
    """A file a run created, modified or deleted in its session's workspace."""

    path: str
    change: str
    size: int = 0
    sha256: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "FileChange":
        return _build(cls, data)


@dataclass
class Result:
    """The outcome of one execution (the API's Result, field for field).

    Conventions: a timeout gives ``exit_code`` 124, ``timed_out`` and a
    ``Timeout:`` line in stderr; death by signal N gives ``exit_code`` -N
    and ``signal`` set; ``output`` is stdout parsed as JSON, else None.
    """

    id: str = ""
    skill: str = ""
    command: List[str] = field(default_factory=list)
    exit_code: int = -1
    success: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    output: Any = None
    timed_out: bool = False
    oom_killed: bool = False
    signal: str = ""
    duration_ms: int = 0
    error: str = ""
    limits: Limits = field(default_factory=Limits)
    image: str = ""
    image_id: str = ""
    runtime: str = ""
    skill_digest: str = ""
    cache: str = ""
    cpu_time_ms: int = 0
    peak_rss_kb: int = 0
    # The largest values of the run's live usage samples; 0 when none was
    # taken (usage_every_ms).
    peak_cpu_percent: float = 0.0
    peak_memory_bytes: int = 0
    peak_pids: int = 0
    workspace_full: bool = False
    workspace_used_bytes: int = 0
    files: Optional[List[FileChange]] = None
    egress: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Result":
        return _build(cls, data, {"limits": Limits.from_json, "files": FileChange.from_json})


@dataclass
class Explanation:
    """What a run would be, decided as the run decides it, without running
    it (the API's Explanation). Folders are the sandbox's: a session's
    folder is ``/workspace``, never a path on the server's host."""

    skill: str = ""
    action: str = ""
    argv: List[str] = field(default_factory=list)
    command: str = ""
    limits: Limits = field(default_factory=Limits)
    image: str = ""
    skill_image: bool = False
    runner: str = ""
    workspace: str = ""
    session: str = ""
    workspace_writable: bool = False
    write_granted: bool = False
    writable: bool = False
    allowed_tools: List[str] = field(default_factory=list)
    policy_digest: str = ""
    # {"checked": bool, "reason": str}: whether the engine's host (CPUs,
    # memory, runtime) was asked, as the run asks it; reason says why not.
    host: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Explanation":
        return _build(cls, data, {"limits": Limits.from_json})


@dataclass
class LiveUsage:
    """One sample of a running sandbox's resource use (a ``usage`` event).

    ``cpu_percent`` is over the last interval, as a share of one core (200
    is two cores busy); ``elapsed_ms`` counts from the job reaching the
    sandbox. Sent on docker, oci and kubernetes. ``workspace_bytes``
    is what the run has written to its writable workspace so far (the bytes
    on its copy-on-write view's write layer, in whole pages); None where not
    measured (no writable workspace, or one copied in).
    """

    elapsed_ms: int = 0
    cpu_percent: float = 0.0
    memory_bytes: int = 0
    pids: int = 0
    workspace_bytes: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "LiveUsage":
        return _build(cls, data)


@dataclass
class Event:
    """One item of a stream: ``stdout`` or ``stderr`` with ``data``, or
    ``usage`` with ``usage`` (every ``usage_every_ms``, default 2 s).

    Streams yield these, then the Result itself; an ``error`` event is
    raised as the matching exception instead of being yielded.
    """

    type: str
    data: str = ""
    usage: Optional[LiveUsage] = None
    result: Optional[Result] = None
    error: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Event":
        return _build(cls, data, {"result": Result.from_json, "usage": LiveUsage.from_json})


@dataclass
class SkillVersion:
    """One stored version of an uploaded skill."""

    name: str = ""
    version: str = ""
    digest: str = ""
    files: int = 0
    bytes: int = 0
    created_at: str = ""
    seq: int = 0
    warnings: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "SkillVersion":
        return _build(cls, data)


@dataclass
class SkillSummary:
    """A skill as listed: what an agent needs to choose it, nothing of its
    body; where it comes from (``operator`` or ``uploaded``) and the digest
    of what its bare name runs. ``disable_model_invocation``: run it when
    named, never show it to a model."""

    name: str
    description: str = ""
    when_to_use: str = ""
    disable_model_invocation: bool = False
    version: str = ""
    digest: str = ""
    source: str = ""
    versions: List[SkillVersion] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "SkillSummary":
        return _build(cls, data, {"versions": SkillVersion.from_json})


@dataclass
class AllowedTool:
    """One allowed-tools entry, e.g. name ``Bash`` with spec ``python3:*``."""

    name: str
    spec: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "AllowedTool":
        return _build(cls, data)


@dataclass
class Activation:
    """An activated skill: its body with {baseDir} resolved, its files and tools."""

    name: str
    description: str = ""
    base_dir: str = ""
    body: str = ""
    scripts: List[str] = field(default_factory=list)
    references: List[str] = field(default_factory=list)
    assets: List[str] = field(default_factory=list)
    allowed_tools: List[AllowedTool] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Activation":
        return _build(cls, data, {"allowed_tools": AllowedTool.from_json})


@dataclass
class SessionInfo:
    """A session as the server describes it."""

    id: str
    created_at: str = ""
    expires_at: str = ""
    bytes_used: int = 0
    bytes_limit: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "SessionInfo":
        return _build(cls, data)


@dataclass
class Snapshot:
    """A session's files at a moment (files only)."""

    id: str
    session: str = ""
    label: str = ""
    created_at: str = ""
    bytes: int = 0
    files: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Snapshot":
        return _build(cls, data)


@dataclass
class StoredFile:
    """A file an upload wrote."""

    path: str
    size: int = 0
    sha256: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "StoredFile":
        return _build(cls, data)


@dataclass
class FileEntry:
    """One entry of a workspace listing; a symlink shows its target, never followed."""

    path: str
    type: str = "file"
    size: int = 0
    sha256: str = ""
    target: str = ""
    modified: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "FileEntry":
        return _build(cls, data)


@dataclass
class UsageFigures:
    """What a token used: runs, CPU (the sum of its Results' cpu_time_ms),
    memory limit times wall time, egress bytes."""

    runs: int = 0
    cpu_time_ms: int = 0
    memory_mib_ms: int = 0
    memory_gib_seconds: float = 0.0
    egress_bytes: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "UsageFigures":
        return _build(cls, data)


@dataclass
class UsageLimits:
    """A window's quota; 0 is unbounded."""

    runs: int = 0
    cpu_seconds: float = 0.0
    memory_gib_seconds: float = 0.0
    egress_bytes: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "UsageLimits":
        return _build(cls, data)


@dataclass
class UsageWindow:
    """A token's use in the current window of one length; ``end`` is when
    the next begins (where a quota refusal's retry_after points)."""

    window: str
    window_seconds: float = 0.0
    start: str = ""
    end: str = ""
    used: UsageFigures = field(default_factory=UsageFigures)
    limits: Optional[UsageLimits] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "UsageWindow":
        return _build(cls, data, {"used": UsageFigures.from_json, "limits": UsageLimits.from_json})


@dataclass
class UsageStored:
    """What a token keeps on the server now (a level, not a window's sum):
    its sessions' bytes (with what their snapshots alone hold) and its
    uploads', and its stored_bytes quota (0: none). At or past ``limit`` a
    new session, file, snapshot, upload or run into a session is refused
    with 429 and no retry_after: deleting frees room, waiting does not."""

    session_bytes: int = 0
    upload_bytes: int = 0
    bytes: int = 0
    limit: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "UsageStored":
        return _build(cls, data)


@dataclass
class Usage:
    """A token's use by its label (never the token): per window and in all,
    and what it stores now (``stored``, None from a server that does not
    say)."""

    label: str
    windows: List[UsageWindow] = field(default_factory=list)
    total: UsageFigures = field(default_factory=UsageFigures)
    stored: Optional[UsageStored] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Usage":
        return _build(
            cls,
            data,
            {"windows": UsageWindow.from_json, "total": UsageFigures.from_json, "stored": UsageStored.from_json},
        )
