"""What the adapters share: one sandboxrun session per sandbox, commands sent
through a skill's exec, and the words a model reads when one is refused."""

from __future__ import annotations

import shlex
from typing import Optional, Sequence, Union

from ..client import Client
from ..errors import BusyError, NotFoundError, RefusedError, SandboxrunError, UnavailableError
from ..session import Session
from ..types import Result

# bash's own status for "found but cannot be executed": a command the policy
# refused never ran, and a model reading 126 knows not to retry it as is.
REFUSED_EXIT = 126


def make_client(client: Optional[Client], url: Optional[str], token: Optional[str]) -> Client:
    """The adapter's client: the one given, else one for url (default $SANDBOXRUN_URL).

    Adapters need sessions, which only a server has: a client in local mode
    is refused here, with the fix, rather than on the first file call.
    """
    if client is None:
        client = Client(url, token)
    elif url or token:
        raise ValueError("give either client= or url=/token=, not both")
    if client.local:
        raise SandboxrunError("the agent-framework adapters keep a workspace in a sandboxrun session, which needs a server: "
                              "set SANDBOXRUN_URL (or pass url=) to a running `sandboxrun serve --sessions DIR`")
    return client


class Workspace:
    """One sandboxrun session used as a framework's sandbox, and the skill
    whose allowed-tools judge its commands.

    ``session`` names an existing session (an id or a Session), which the
    adapter then never deletes; without it a new one is made (``ttl``) and
    ``close`` deletes it.
    """

    def __init__(self, client: Client, skill: str, session: Union[str, Session, None] = None,
                 ttl: Union[str, float, None] = None) -> None:
        if not skill or not isinstance(skill, str):
            raise ValueError("skill: name the skill whose allowed-tools judge the commands, e.g. skill='data-analysis'")
        self.client = client
        self.skill = skill
        if session is None:
            self.id = client.create_session(ttl=ttl).id
            self.owned = True
        else:
            self.id = session.id if isinstance(session, Session) else str(session)
            self.owned = False
        self.closed = False

    def exec(self, command: str, timeout: Optional[float] = None) -> Result:
        return self.client.exec(self.skill, command, session=self.id, timeout=timeout)

    def close(self) -> None:
        """Delete the session if this adapter made it; one already gone is no error."""
        if self.closed:
            return
        self.closed = True
        if self.owned:
            delete_session(self.client, self.id)


def delete_session(client: Client, session_id: str) -> None:
    try:
        client.delete_session(session_id)
    except NotFoundError:
        pass


def shell_command(argv: Sequence[str]) -> str:
    """The command line sandboxrun's exec judges for an argv.

    ``sh -c CMD`` / ``bash -lc CMD`` is CMD itself: sandboxrun runs every
    command under bash, and judging CMD (not ``sh``) is what makes the
    skill's allowed-tools meaningful. Anything else is quoted word by word.
    """
    words = [str(w) for w in argv]
    if len(words) == 3 and words[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and words[1] in ("-c", "-lc"):
        return words[2]
    return shlex.join(words)


def refusal_text(err: RefusedError) -> str:
    """What a model reads about a refused command: what, why, and the entry that would allow it."""
    text = f"sandboxrun refused the command: {err.message}"
    if err.suggest:
        text += f" (the skill's allowed-tools would need {err.suggest})"
    return text


def truncation_note(res: Result) -> str:
    """A line saying which stream was cut and where, or "" when none was."""
    cut = [name for name, flag in (("stdout", res.stdout_truncated), ("stderr", res.stderr_truncated)) if flag]
    if not cut:
        return ""
    cap = res.limits.output_bytes
    at = f" at {cap} bytes" if cap else ""
    return f"[sandboxrun: {' and '.join(cut)} truncated{at} (the operator's output limit)]"


def retryable(err: SandboxrunError) -> bool:
    """A failure that the same call may not meet again: a full queue, an engine or replica away."""
    return isinstance(err, (BusyError, UnavailableError))
