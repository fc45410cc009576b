"""HTTP to a sandboxrun server over TCP (http://, https://) or a unix socket."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any, Dict, Iterator, Optional, Tuple
from urllib.parse import urlsplit

from .errors import TransportError, error_for_status
from .types import Result


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Transport:
    """One connection per request: calls are independent, so threads may share a Transport."""

    def __init__(self, url: str, token: Optional[str], timeout: Optional[float]) -> None:
        self.url = url
        self._token = token
        self._timeout = timeout
        if url.startswith("unix:"):
            self._unix: Optional[str] = url[len("unix:"):]
            if not self._unix:
                raise ValueError("url unix: needs a socket path, e.g. unix:/run/sandboxrun.sock")
            self._prefix = ""
            return
        self._unix = None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url {url!r}: give http://host:port, https://host or unix:/path/to.sock")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")

    def _connection(self) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, self._timeout)
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def open(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send a request and return the open response; the caller closes the connection.

        An error status is raised as its typed exception.
        """
        hdrs = dict(headers or {})
        if self._token:
            hdrs["Authorization"] = "Bearer " + self._token
        conn = self._connection()
        try:
            conn.request(method, self._prefix + path, body=body, headers=hdrs)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError(f"{method} {path}: cannot reach the sandboxrun server at {self.url}: {e}") from e
        if resp.status >= 300:
            # A redirect is never followed (http.client does not) nor taken
            # for success: the API answers none.
            try:
                raise _error(resp, method, path)
            finally:
                conn.close()
        return conn, resp

    def call(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Tuple[int, Dict[str, str], bytes]:
        """Send a request and read the whole answer."""
        conn, resp = self.open(method, path, body, headers)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"{method} {path}: the answer broke off: {e}") from e
        finally:
            conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def json(self, method: str, path: str, doc: Any = None, headers: Optional[Dict[str, str]] = None) -> Any:
        hdrs = {"Accept": "application/json"}
        hdrs.update(headers or {})
        body = None
        if doc is not None:
            body = json.dumps(doc).encode()
            hdrs["Content-Type"] = "application/json"
        status, _, data = self.call(method, path, body, hdrs)
        if status == 204 or not data:
            return None
        return _decode(data, method, path)

    def lines(self, method: str, path: str, doc: Any) -> Iterator[Dict[str, Any]]:
        """POST doc asking for an NDJSON stream and yield its events as they come."""
        hdrs = {"Accept": "application/x-ndjson", "Content-Type": "application/json"}
        conn, resp = self.open(method, path, json.dumps(doc).encode(), hdrs)
        try:
            ctype = resp.getheader("Content-Type", "")
            if not ctype.startswith("application/x-ndjson"):
                # A server answers a request refused before any output with
                # its plain status; a 200 in JSON is one whole Result.
                yield {"type": "result", "result": _decode(resp.read(), method, path)}
                return
            for raw in resp:
                line = raw.strip()
                if line:
                    yield _decode(line, method, path)
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"{method} {path}: the stream broke off: {e}") from e
        finally:
            conn.close()


def _decode(data: bytes, method: str, path: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as e:
        raise TransportError(f"{method} {path}: the answer is not JSON: {data[:200]!r}") from e


def _error(resp: http.client.HTTPResponse, method: str, path: str) -> Exception:
    raw = resp.read()
    body: Dict[str, Any] = {}
    try:
        parsed = json.loads(raw)
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass
    message = str(body.get("error") or raw.decode("utf-8", "replace").strip() or resp.reason)
    if 300 <= resp.status < 400:
        location = resp.getheader("Location", "")
        body = {"location": location}
        message = (f"{method} {path} answered {resp.status}, a redirect to {location!r}, not followed: "
                   "the sandboxrun API answers none, so the server (or a proxy) is not the one expected")
    result = Result.from_json(body["result"]) if isinstance(body.get("result"), dict) else None
    return error_for_status(resp.status, message, body, result, resp.getheader("Retry-After"))
