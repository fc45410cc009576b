"""A sandboxrun skill as the code executor of a Google ADK agent.

``SandboxrunCodeExecutor`` is a ``google.adk.code_executors.BaseCodeExecutor``
(google-adk 1.x): each ``execute_code`` writes the input files into a
sandboxrun session's /workspace, runs the model's code with the skill's
``python`` (its limits, network and image apply), and hands back what the
code printed and the files it created or changed. With ``stateful=True`` one
session per ADK execution id is kept across calls (files persist; ``close``
deletes them); otherwise each call gets a fresh session, deleted after it.

Importing this module imports google.adk.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import threading
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

try:
    from google.adk.code_executors.base_code_executor import BaseCodeExecutor
    from google.adk.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult, File
except ImportError as e:  # pragma: no cover - the framework is an optional extra
    raise ImportError("sandboxrun.integrations.adk needs google-adk 1.x: pip install 'sandboxrun[adk]'") from e

from ..errors import RefusedError, SandboxrunError
from ._session import delete_session, make_client, refusal_text, truncation_note

if TYPE_CHECKING:  # pragma: no cover
    from google.adk.agents.invocation_context import InvocationContext

__all__ = ["SandboxrunCodeExecutor"]


class SandboxrunCodeExecutor(BaseCodeExecutor):
    """Runs an ADK agent's code in a sandboxrun skill's sandbox.

    Fields: ``skill`` (required) names the skill whose sandbox runs the code;
    ``url``/``token`` the server (default ``$SANDBOXRUN_URL``,
    ``$SANDBOXRUN_TOKEN``) or ``client`` a ``sandboxrun.Client``; ``timeout``
    seconds per execution (None: the skill's, held to the operator's
    ceiling); ``session_ttl`` how long an idle stateful session is kept.
    """

    skill: str
    url: Optional[str] = None
    token: Optional[str] = None
    client: Any = None
    timeout: Optional[float] = None
    session_ttl: Optional[str] = "1h"

    _client: Any = None
    _sessions: Any = None
    _lock: Any = None

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if not self.skill:
            raise ValueError("skill: name the skill whose sandbox runs the code, e.g. skill='data-analysis'")
        self._client = make_client(self.client, self.url, self.token)
        self._sessions = {}
        self._lock = threading.Lock()

    def execute_code(self, invocation_context: "InvocationContext",
                     code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        """Run the code; a refusal, a timeout or a failed run comes back in stderr,
        as ADK counts an execution with stderr as an error to retry."""
        try:
            session_id, temporary = self._session_for(code_execution_input.execution_id)
        except SandboxrunError as e:
            return CodeExecutionResult(stderr=f"sandboxrun: no session for the code: {e.message}")
        try:
            for f in code_execution_input.input_files:
                self._client.put_file(session_id, f.name, _file_bytes(f))
            res = self._client.python(self.skill, code_execution_input.code, session=session_id, timeout=self.timeout)
            outputs = [self._output_file(session_id, c.path) for c in (res.files or [])
                       if c.change in ("created", "modified")]
        except RefusedError as e:
            return CodeExecutionResult(stderr=refusal_text(e))
        except SandboxrunError as e:
            return CodeExecutionResult(stderr=f"sandboxrun: {e.message}")
        finally:
            if temporary:
                delete_session(self._client, session_id)
        stdout = res.stdout
        note = truncation_note(res)
        if note:
            stdout = stdout + ("\n" if stdout and not stdout.endswith("\n") else "") + note + "\n"
        stderr = res.stderr
        if res.exit_code != 0 and not stderr.strip():
            # A failure must reach ADK as stderr, or it counts as success.
            stderr = f"the code exited with status {res.exit_code}" + (f" ({res.error})" if res.error else "")
        return CodeExecutionResult(stdout=stdout, stderr=stderr, output_files=outputs)

    def close(self) -> None:
        """Delete the sessions kept for stateful executions."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for sid in sessions:
            delete_session(self._client, sid)

    def kept_sessions(self) -> Dict[str, str]:
        """execution id -> sandboxrun session id of the sessions kept for stateful executions."""
        with self._lock:
            return dict(self._sessions)

    def _session_for(self, execution_id: Optional[str]) -> Tuple[str, bool]:
        """The session of an execution id (made on first use), or a fresh one to delete after the call."""
        if not execution_id:
            return self._client.create_session(ttl=self.session_ttl).id, True
        with self._lock:
            sid = self._sessions.get(execution_id)
            if sid is None:
                sid = self._client.create_session(ttl=self.session_ttl).id
                self._sessions[execution_id] = sid
            return sid, False

    def _output_file(self, session_id: str, path: str) -> File:
        data = self._client.get_file(session_id, path)
        mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
        # base64 text: what every 1.x release decodes (later ones also take raw bytes).
        return File(name=path, content=base64.b64encode(data).decode("ascii"), mime_type=mime)


def _file_bytes(f: File) -> bytes:
    """An input file's bytes: ADK gives base64 text, or raw bytes in its later 1.x releases."""
    if isinstance(f.content, (bytes, bytearray)):
        return bytes(f.content)
    try:
        return base64.b64decode(f.content, validate=True)
    except (binascii.Error, ValueError) as e:
        raise SandboxrunError(f"input file {f.name!r}: its content is text but not base64, as ADK's File holds it: {e}") from e
