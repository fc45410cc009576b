"""Sandbox paths as the frameworks give them, mapped onto the session's file API,
and the glob patterns their file tools take.

A framework names files by their absolute path in the sandbox; the session's
file API names them relative to /workspace. Only the workspace outlives a
run (the rest of the sandbox's filesystem is read-only or a per-run tmpfs),
so a path outside it is refused rather than quietly written somewhere that
vanishes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

WORKSPACE = "/workspace"

# Brace expansion multiplies patterns; past this many, the pattern is refused
# rather than matched slowly.
MAX_EXPANSIONS = 256


class PathError(ValueError):
    """A path the file API cannot take. ``code`` is ``invalid_path`` (not an
    absolute, clean path) or ``outside`` (a path beyond the workspace)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def to_rel(path: object, root: str = WORKSPACE) -> str:
    """The file API's name for an absolute sandbox path under root ("" for root itself).

    Repeated slashes and ``.`` folders are tolerated; ``..`` is refused, so a
    path never climbs out of what it names.
    """
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        raise PathError("invalid_path", f"{path!r}: give an absolute path in the sandbox, e.g. {root}/notes.txt")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathError("invalid_path", f"{path!r}: '..' is not allowed; name the file by its absolute path")
    base = [p for p in root.split("/") if p]
    if parts[: len(base)] != base:
        raise PathError("outside", f"{path!r} is outside {root}: the file tools reach the session's workspace only "
                                   f"(files elsewhere in the sandbox do not outlive a command)")
    return "/".join(parts[len(base):])


def to_abs(rel: str, root: str = WORKSPACE) -> str:
    """The absolute sandbox path of a file API name."""
    return root.rstrip("/") + ("/" + rel if rel else "")


def parent_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


# -- globs -------------------------------------------------------------------


def _expand_braces(pattern: str) -> List[str]:
    """``a{b,c{d,e}}`` -> ``[ab, acd, ace]``; ValueError past MAX_EXPANSIONS."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth, i, cuts = 0, start, []
    while i < len(pattern):
        ch = pattern[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        elif ch == "," and depth == 1:
            cuts.append(i)
        i += 1
    if depth != 0:  # an unclosed brace is a literal one
        return [pattern]
    end = i
    edges = [start] + cuts + [end]
    alternatives = [pattern[a + 1:b] for a, b in zip(edges, edges[1:])]
    out: List[str] = []
    for alt in alternatives:
        for tail in _expand_braces(pattern[:start] + alt + pattern[end + 1:]):
            out.append(tail)
            if len(out) > MAX_EXPANSIONS:
                raise ValueError(f"pattern {pattern!r} expands to more than {MAX_EXPANSIONS} patterns; narrow it")
    return out


def _segment_regex(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        ch = seg[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            # A "]" right after "[" or "[!" is a member, as in a shell.
            first = i + 2 if seg[i + 1:i + 2] in ("!", "^") else i + 1
            close = seg.find("]", first + 1)
            if close < 0:
                out.append(re.escape(ch))
            else:
                body = seg[i + 1:close]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _segment(seg: str) -> "re.Pattern[str]":
    return re.compile(_segment_regex(seg) + r"\Z", re.DOTALL)


def _segment_match(seg: str, name: str) -> bool:
    # A leading dot is matched only by a pattern that writes it.
    if name.startswith(".") and not seg.startswith("."):
        return False
    return _segment(seg).match(name) is not None


def _parts_match(names: Sequence[str], segs: Sequence[str]) -> bool:
    memo: dict = {}

    def at(n: int, s: int) -> bool:
        key = (n, s)
        if key in memo:
            return memo[key]
        if s == len(segs):
            ok = n == len(names)
        elif segs[s] == "**":
            # ** spans zero or more names (folders, or at the end anything below),
            # never one that starts with a dot.
            ok = at(n, s + 1) or (n < len(names) and not names[n].startswith(".") and at(n + 1, s))
        else:
            ok = n < len(names) and _segment_match(segs[s], names[n]) and at(n + 1, s + 1)
        memo[key] = ok
        return ok

    return at(0, 0)


class Glob:
    """A glob of the Deep Agents file tools, matched against a path relative to
    the search root: without ``/`` it matches the file's name at any depth;
    with ``/`` the whole relative path (``**`` for any folders, none hidden);
    a leading ``/`` anchors it to the root. ``{a,b}`` alternatives, ``?``,
    ``[abc]`` and ``[!abc]`` as in a shell."""

    def __init__(self, pattern: str) -> None:
        if any(seg == ".." for seg in pattern.split("/")):
            raise ValueError(f"pattern {pattern!r}: '..' is not allowed in a glob")
        self._alts: List[Tuple[bool, List[str]]] = []
        for alt in _expand_braces(pattern):
            anchored = alt.startswith("/")
            body = alt.lstrip("/")
            by_path = anchored or "/" in body
            segs = [s for s in body.split("/") if s]
            for seg in segs:
                if seg != "**":
                    try:
                        _segment(seg)
                    except re.error as e:
                        raise ValueError(f"pattern {pattern!r}: {seg!r} is not a glob: {e}") from e
            self._alts.append((by_path, segs))

    def match(self, rel: str) -> bool:
        names = rel.split("/")
        for by_path, segs in self._alts:
            if by_path:
                if _parts_match(names, segs):
                    return True
            elif len(segs) == 1 and _segment_match(segs[0], names[-1]):
                return True
        return False


def under(rel: str, folder: str) -> Optional[str]:
    """rel relative to folder ("" is the root), or None when rel is not inside it."""
    if not folder:
        return rel
    if rel.startswith(folder + "/"):
        return rel[len(folder) + 1:]
    return None
