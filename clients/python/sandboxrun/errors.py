"""Typed exceptions for every way a call can fail.

Each carries the server's own words (``message``), the HTTP status when
there was one, and, where the sandbox started before it failed, the
partial ``result``. Callers branch on the class, never on the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .types import Explanation, Result


class SandboxrunError(Exception):
    """Base of every error this package raises."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        body: Optional[Dict[str, Any]] = None,
        result: Optional["Result"] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body: Dict[str, Any] = body or {}
        self.result = result


class TransportError(SandboxrunError):
    """The server could not be reached, or answered something that is not HTTP/JSON."""


class RedirectError(SandboxrunError):
    """3xx: the server answered a redirect, which the client never follows.

    The API answers none; a client that followed one with the same method
    could act on another resource (a DELETE on the parent). ``location`` is
    where it pointed.
    """

    @property
    def location(self) -> str:
        return str(self.body.get("location", ""))


class LocalModeError(SandboxrunError):
    """The call needs a server: the local CLI mode has no such operation."""


class BadRequestError(SandboxrunError):
    """400: the request was malformed; the message says which part and why."""


class BadParamError(BadRequestError, ValueError):
    """An id, a name or a file path refused before anything was sent.

    Empty, ``.``, ``..`` or holding a ``/`` (an id or a name), or a file path
    with an empty, ``.`` or ``..`` folder: a server's router would resolve it
    to another resource (``snapshots/..`` is the session itself). No server
    answered: ``status`` is None. A ``BadRequestError``, as the server's 400
    for the same path would be.
    """


class AuthError(SandboxrunError):
    """401: the bearer token is missing or unknown (set SANDBOXRUN_TOKEN)."""


class RefusedError(SandboxrunError):
    """403: refused by policy before anything ran.

    For a denied command, ``part`` is the denied part, ``reason`` why, and
    ``suggest`` the allowed-tools entry that would allow it; from
    ``Client.explain``, ``explanation`` is what was decided before.
    """

    @property
    def part(self) -> str:
        return str(self.body.get("part", ""))

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))

    @property
    def suggest(self) -> str:
        return str(self.body.get("suggest", ""))

    @property
    def explanation(self) -> Optional["Explanation"]:
        """On a refused ``Client.explain``: what was decided before the refusal."""
        from .types import Explanation

        doc = self.body.get("explanation")
        return Explanation.from_json(doc) if isinstance(doc, dict) else None


class PartialListError(SandboxrunError):
    """A list that may lack items: the replicas in ``unreachable`` did not
    answer (none named: the server was started without --replicas). The
    items that came are in ``items``."""

    def __init__(self, message: str, *, items: Any, unreachable: Any, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.items = items
        self.unreachable = list(unreachable or [])


class NotFoundError(SandboxrunError):
    """404: no such skill, session or file."""


class ConflictError(SandboxrunError):
    """409: a folder or a link is where a file is needed."""


class RequestTimeoutError(SandboxrunError):
    """408: the request's body did not arrive in time; nothing ran or was kept, so send it again."""


class TooLargeError(SandboxrunError):
    """413: a limit on bytes or files; the message names the limit and how to raise it."""


class InvalidSkillError(SandboxrunError):
    """422: an uploaded skill does not validate; ``body["errors"]`` lists the findings."""


class UnsupportedMediaError(SandboxrunError):
    """415: a bulk upload that is not a tar."""


class BusyError(SandboxrunError):
    """429: every slot is taken, the session count is reached, or a quota of the token's is (the message names it); retry after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float = 1.0, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(SandboxrunError):
    """5xx: the server or the sandbox failed. ``reason`` is the server's own explanation.

    When the sandbox failed mid-run, ``result`` holds what is known.
    """

    @property
    def reason(self) -> str:
        return self.message


class UnavailableError(ServerError):
    """503 (or the CLI's exit status 3): the engine is unreachable, an image is missing, or the backend cannot prove a run without network is isolated (the operator's setup; no Retry-After)."""


_BY_STATUS = {
    400: BadRequestError,
    401: AuthError,
    403: RefusedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: TooLargeError,
    415: UnsupportedMediaError,
    422: InvalidSkillError,
    503: UnavailableError,
}


def error_for_status(
    status: int,
    message: str,
    body: Optional[Dict[str, Any]] = None,
    result: Optional["Result"] = None,
    retry_after: Optional[str] = None,
) -> SandboxrunError:
    """The typed exception for an HTTP error status."""
    if status == 429:
        try:
            delay = float(retry_after) if retry_after else 1.0
        except ValueError:
            delay = 1.0
        return BusyError(message, retry_after=delay, status=status, body=body, result=result)
    if 300 <= status < 400:
        return RedirectError(message, status=status, body=body, result=result)
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else SandboxrunError
    return cls(message, status=status, body=body, result=result)
