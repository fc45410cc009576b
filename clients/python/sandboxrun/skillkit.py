"""Drop-in for skillkit's ``ScriptExecutor`` (contract v0.3.0), sandboxed.

Change ``from skillkit.core.scripts import ScriptExecutor`` to
``from sandboxrun.skillkit import ScriptExecutor``. Names, arguments, the
result's fields, the exceptions and the validations (in the contract's
order) are kept; the script runs in a sandboxrun container instead of a
host subprocess.

What differs, and why:

- The script runs in a fresh container: no network unless the skill
  declares it and the operator allows it, memory/CPU/pids caps, read-only
  filesystem, an unprivileged user, no host environment. The seed ran it on
  the host with the caller's rights.
- The working directory is the skill's folder locally (read-only); on a
  server it is ``/workspace`` (a server has no per-run cwd). Scripts that
  open files relative to their skill should use ``$SKILL_BASE_DIR``.
- ``SKILL_BASE_DIR`` is the skill's path inside the sandbox
  (``/skills/<name>``), not the host path: the host path does not exist
  there. ``SKILL_NAME`` and ``SKILL_VERSION`` come from the skill's own
  SKILL.md as sandboxrun read it; ``SKILLKIT_VERSION`` is the contract's.
- ``max_output_size`` can lower the cap, never raise it above the
  operator's (10 MiB per stream by default).
- ``InterpreterNotFoundError`` means the interpreter is missing from the
  sandbox's image (or cannot be chosen for the file), not from the host.
- On a server, ``skill_base_dir`` is mapped to the skill's name
  (``skill_metadata.name``, else the folder's name): the server runs its
  own copy of that skill.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal as _signal
import stat
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional, Union

from ._shared import default_client, skill_ref
from .client import Client
from .types import Result

__all__ = [
    "ArgumentSerializationError",
    "ArgumentSizeError",
    "InterpreterNotFoundError",
    "PathSecurityError",
    "ScriptExecutionResult",
    "ScriptExecutor",
    "ScriptPermissionError",
    "SkillMetadata",
]

SKILLKIT_VERSION = "0.3.0"
MAX_ARGUMENTS_BYTES = 10 * 1024 * 1024

logger = logging.getLogger("sandboxrun.skillkit")
logger.addHandler(logging.NullHandler())  # a library logs only where the host configured it


class PathSecurityError(Exception):
    """The script path escapes the skill directory."""


class ScriptPermissionError(Exception):
    """The script has setuid or setgid bits."""


class InterpreterNotFoundError(Exception):
    """No interpreter for the script in the sandbox."""


class ArgumentSerializationError(Exception):
    """The arguments cannot be serialised to JSON."""


class ArgumentSizeError(Exception):
    """The arguments' JSON is over 10 MiB."""


@dataclass
class SkillMetadata:
    """The part of skillkit's SkillMetadata the executor reads (any object with
    ``name`` and ``version`` attributes will do)."""

    name: str
    version: str = ""
    description: str = ""


@dataclass
class ScriptExecutionResult:
    """The outcome of one execution, with skillkit's field names.

    ``result`` is sandboxrun's full Result (limits, run id, image, ...).
    """

    stdout: str
    stderr: str
    exit_code: int
    execution_time_ms: float
    script_path: Path
    signal: Optional[str] = None
    signal_number: Optional[int] = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timeout: bool = False
    result: Optional[Result] = field(default=None, repr=False)

    @property
    def success(self) -> bool:
        return self.exit_code == 0

    @property
    def signaled(self) -> bool:
        return self.signal is not None


_EXTENSIONS = {
    ".py": "python3",
    ".js": "node",
    ".mjs": "node",
    ".cjs": "node",
    ".sh": "bash",
    ".bash": "bash",
}


def _interpreter_uncached(path: str, mtime_ns: int) -> Optional[str]:
    ext = os.path.splitext(path)[1].lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    prog = os.path.basename(words[0])
    if prog == "env" and len(words) > 1:
        return words[1]
    return prog


_interpreter_cached = lru_cache(maxsize=256)(_interpreter_uncached)


def _check_timeout(timeout: Any) -> int:
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 600:
        raise ValueError(f"timeout must be an integer number of seconds from 1 to 600, got {timeout!r}")
    return timeout


class ScriptExecutor:
    """Execute skill scripts in sandboxrun containers, with skillkit's interface.

    ``client`` (keyword only, not in the seed) picks the server or local
    CLI; by default ``SANDBOXRUN_URL`` decides, else the local CLI. The
    executor holds no mutable state of its own: threads may share it.
    """

    def __init__(
        self,
        timeout: int = 30,
        max_output_size: int = 10 * 1024 * 1024,
        use_cache: bool = True,
        *,
        client: Optional[Client] = None,
    ) -> None:
        self.timeout = _check_timeout(timeout)
        if max_output_size < 1:
            raise ValueError(f"max_output_size must be at least 1 byte, got {max_output_size}")
        self.max_output_size = max_output_size
        self.use_cache = use_cache
        self._client = client
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Client:
        with self._client_lock:
            if self._client is None:
                self._client = default_client()
            return self._client

    def execute(
        self,
        script_path: Union[Path, str],
        arguments: Dict[str, Any],
        skill_base_dir: Union[Path, str],
        skill_metadata: Any,
        timeout: Optional[int] = None,
    ) -> ScriptExecutionResult:
        """Validate, then run the script with ``arguments`` as JSON on its stdin.

        Raises PathSecurityError, ScriptPermissionError,
        InterpreterNotFoundError, ArgumentSerializationError,
        ArgumentSizeError, FileNotFoundError and ValueError as the contract
        says; a refusal by sandboxrun's own checks (which repeat these in
        the sandbox's terms) raises sandboxrun.RefusedError.
        """
        limit = self.timeout if timeout is None else _check_timeout(timeout)
        script_path, skill_base_dir = Path(script_path), Path(skill_base_dir)
        real_base = os.path.realpath(skill_base_dir)
        if not script_path.is_absolute():
            script_path = Path(real_base) / script_path
        # 1. The path, symlinks followed, stays inside the skill.
        real = os.path.realpath(script_path)
        if os.path.commonpath([real, real_base]) != real_base:
            raise PathSecurityError(f"Script path escapes skill directory: {script_path}")
        rel = os.path.relpath(real, real_base)
        if not os.path.isfile(real):
            raise FileNotFoundError(f"Script not found: {rel}")
        # 2. No set-id bits.
        mode = os.stat(real).st_mode
        if mode & stat.S_ISUID:
            raise ScriptPermissionError(f"Script has setuid bit: {rel}")
        if mode & stat.S_ISGID:
            raise ScriptPermissionError(f"Script has setgid bit: {rel}")
        # 3. An interpreter can be chosen for it.
        st = os.stat(real)
        pick = _interpreter_cached if self.use_cache else _interpreter_uncached
        interpreter = pick(real, st.st_mtime_ns)
        if interpreter is None:
            raise InterpreterNotFoundError(f"Interpreter not found for {script_path.name}: no known extension or shebang")
        # 4. Arguments serialise to JSON within the cap.
        if not isinstance(arguments, dict):
            raise ArgumentSerializationError(f"Cannot serialize arguments: expected a dict, got {type(arguments).__name__}")
        try:
            payload = json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as e:
            raise ArgumentSerializationError(f"Cannot serialize arguments: {e}") from e
        size = len(payload.encode())
        if size > MAX_ARGUMENTS_BYTES:
            raise ArgumentSizeError(f"Arguments too large: {size} bytes (max 10MB)")

        # 5-7. Run in the sandbox and report.
        client = self.client
        name = getattr(skill_metadata, "name", None) or None
        start = time.perf_counter()
        res = client.run(
            skill_ref(client, Path(real_base), name),
            rel,
            args=arguments,
            env={"SKILLKIT_VERSION": SKILLKIT_VERSION},
            timeout=limit,
            cwd="skill" if client.local else None,
        )
        elapsed = (time.perf_counter() - start) * 1000.0
        if res.exit_code == 127 and res.error.startswith("command not found"):
            # sandboxrun names the missing program in error; the API has no
            # separate code for it.
            raise InterpreterNotFoundError(f"Interpreter '{interpreter}' not found in PATH for {script_path.name}: {res.error}")
        out = self._convert(res, script_path, max(elapsed, math.ulp(1.0)))
        self._log(out, limit)
        return out

    def _convert(self, res: Result, script_path: Path, elapsed_ms: float) -> ScriptExecutionResult:
        stdout, out_cut = _cap(res.stdout, self.max_output_size)
        stderr, err_cut = _cap(res.stderr, self.max_output_size)
        sig_name: Optional[str] = None
        sig_num: Optional[int] = None
        if res.signal and res.exit_code < 0:
            sig_name, sig_num = res.signal, -res.exit_code
        elif res.signal:
            try:
                sig_num = int(_signal.Signals[res.signal])
                sig_name = res.signal
            except KeyError:
                pass
        return ScriptExecutionResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=124 if res.timed_out else (-sig_num if sig_num else res.exit_code),
            execution_time_ms=elapsed_ms,
            script_path=script_path,
            signal=None if res.timed_out else sig_name,
            signal_number=None if res.timed_out else sig_num,
            stdout_truncated=res.stdout_truncated or out_cut,
            stderr_truncated=res.stderr_truncated or err_cut,
            timeout=res.timed_out,
            result=res,
        )

    def _log(self, r: ScriptExecutionResult, limit: int) -> None:
        name = r.script_path.name
        if r.timeout:
            logger.warning("Script timeout: %s exceeded %ss", name, limit)
        if r.stdout_truncated:
            logger.warning("Stdout truncated for %s: %s bytes -> %s bytes", name,
                           r.result.stdout_bytes if r.result else len(r.stdout), self.max_output_size)
        if r.success:
            logger.info("Script executed: %s | exit_code=0 | time=%.2fms", name, r.execution_time_ms)
        else:
            logger.error("Script failed: %s | exit_code=%s | time=%.2fms | error=%s", name, r.exit_code,
                         r.execution_time_ms, r.stderr[:256])


def _cap(text: str, limit: int) -> "tuple[str, bool]":
    raw = text.encode()
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", "ignore"), True

