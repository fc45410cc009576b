"""Reading files the way an agent's file tools show them: pages of lines,
binary as base64, literal search across a workspace tar. Framework-free, so
the same code serves any adapter."""

from __future__ import annotations

import base64
import io
import tarfile
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from ._paths import Glob, under

# What one read returns at most: text past it is cut (and said so); a binary
# file past it is refused, as base64 of it would swamp a model's context.
MAX_PAGE_BYTES = 500 * 1024
MAX_BINARY_BYTES = 500 * 1024

TRUNCATED = ("\n\n[sandboxrun: this page was cut at {cap} bytes; read on with a larger offset "
             "or a smaller limit]")


@dataclass
class Page:
    """One read: text (or base64) and, for text, where the window lies."""

    content: str
    encoding: str = "utf-8"
    total_lines: Optional[int] = None
    start_line: Optional[int] = None
    end_line: Optional[int] = None
    next_offset: Optional[int] = None
    no_lines_requested: bool = False
    error: Optional[str] = None


def decode_text(data: bytes) -> Optional[str]:
    """The file as text, or None when it is not UTF-8 (or holds a NUL byte, as binaries do)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_lines(text: str) -> List[str]:
    """Lines without their ending; a final newline does not start another line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def page(data: bytes, offset: int, limit: int, cap: int = MAX_PAGE_BYTES) -> Page:
    """Lines offset (0-based) to offset+limit of a file, as a read tool returns them."""
    if not data:
        return Page(content="")
    text = decode_text(data)
    if text is None:
        if len(data) > MAX_BINARY_BYTES:
            return Page(content="", error=f"binary file of {len(data)} bytes exceeds the {MAX_BINARY_BYTES}-byte preview; "
                                          "download it instead")
        return Page(content=base64.b64encode(data).decode("ascii"), encoding="base64")
    offset = max(int(offset), 0)
    limit = int(limit)
    if limit <= 0:
        return Page(content="", no_lines_requested=True)
    lines = split_lines(text)
    if offset >= len(lines):
        return Page(content="", error=f"line offset {offset} exceeds the file's length ({len(lines)} lines)")
    shown: List[str] = []
    used = 0
    cut = False
    for line in lines[offset:offset + limit]:
        piece = line if not shown else "\n" + line
        size = len(piece.encode("utf-8"))
        if used + size > cap:
            cut = True
            break
        shown.append(piece)
        used += size
    if not shown:  # one line longer than the cap: show its head so the read still advances
        head = lines[offset].encode("utf-8")[:cap].decode("utf-8", "ignore")
        shown, cut = [head], True
    end = offset + len(shown)
    content = "".join(shown) + (TRUNCATED.format(cap=cap) if cut else "")
    return Page(content=content, total_lines=len(lines), start_line=offset + 1, end_line=end,
                next_offset=end if end < len(lines) else None)


def tar_files(tar_bytes: bytes) -> Iterator[Tuple[str, bytes]]:
    """(relative path, bytes) of each regular file of a workspace tar."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tf:
        for member in tf:
            if not member.isfile():
                continue
            f = tf.extractfile(member)
            if f is None:
                continue
            yield member.name.lstrip("./").rstrip("/"), f.read()


@dataclass
class Match:
    rel: str
    line: int
    text: str


def grep_tar(tar_bytes: bytes, pattern: str, folder: str, glob: Optional[str],
             max_count: Optional[int]) -> Tuple[List[Match], bool]:
    """Lines holding pattern (literally) in the text files at or under folder,
    filtered by glob (matched relative to folder); and whether max_count cut it."""
    matcher = Glob(glob) if glob else None
    found: List[Match] = []
    for rel, data in sorted(tar_files(tar_bytes)):
        inside = rel if rel == folder else under(rel, folder)
        if inside is None:
            continue
        if matcher is not None and rel != folder and not matcher.match(inside):
            continue
        text = decode_text(data)
        if text is None:
            continue
        for n, line in enumerate(split_lines(text), 1):
            if pattern in line:
                if max_count is not None and len(found) >= max_count:
                    return found, True
                found.append(Match(rel, n, line))
    return found, False
