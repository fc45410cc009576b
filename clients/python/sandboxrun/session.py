"""A session on the server, with its files and the runs that use it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Union

from .errors import NotFoundError
from .types import FileEntry, Result, SessionInfo, StoredFile

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client


class Session:
    """A session on the server: its files and the runs that use its folder as /workspace.

    ``with client.create_session() as s:`` deletes the session at the end.
    """

    def __init__(self, client: "Client", info: SessionInfo) -> None:
        self.client = client
        self.info = info

    @property
    def id(self) -> str:
        return self.info.id

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete()

    def refresh(self) -> SessionInfo:
        self.info = self.client.get_session(self.id)
        return self.info

    def delete(self) -> None:
        """Delete the session; one already gone is not an error."""
        try:
            self.client.delete_session(self.id)
        except NotFoundError:
            pass

    def upload(self, path: str, data: Union[bytes, str]) -> StoredFile:
        return self.client.put_file(self.id, path, data)

    def download(self, path: str) -> bytes:
        return self.client.get_file(self.id, path)

    def remove(self, path: str) -> None:
        self.client.delete_file(self.id, path)

    def files(self, path: Optional[str] = None) -> List[FileEntry]:
        return self.client.list_files(self.id, path)

    def upload_tar(self, data: bytes) -> List[StoredFile]:
        return self.client.put_tar(self.id, data)

    def download_tar(self) -> bytes:
        return self.client.get_tar(self.id)

    def run(self, skill: str, script: str, **kw: Any) -> Result:
        return self.client.run(skill, script, session=self.id, **kw)

    def exec(self, skill: str, command: str, **kw: Any) -> Result:
        return self.client.exec(skill, command, session=self.id, **kw)

    def python(self, skill: str, code: str, **kw: Any) -> Result:
        return self.client.python(skill, code, session=self.id, **kw)
