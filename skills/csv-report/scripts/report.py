#!/usr/bin/env python3
# /// script
# requires-python = ">=3.9"
# dependencies = ["tabulate>=0.8"]
# ///
"""A CSV file as a text table.

Arguments (JSON on stdin): path (optional, default the bundled sample),
columns (optional list), sort (optional column), descending (optional bool),
limit (optional, default 50, 1 to 1000), format (optional, default github).
"""

import csv
import json
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # the skill folder is read-only in the sandbox

FORMATS = ("github", "grid", "simple", "plain", "pipe", "rst")
ARGUMENTS = {"path", "columns", "sort", "descending", "limit", "format"}
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


class UsageError(Exception):
    """A problem with the input: one line on stderr, exit status 1."""


def read_args() -> dict:
    raw = sys.stdin.read()
    if not raw.strip():
        return {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"standard input is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(args, dict):
        raise UsageError("the arguments must be a JSON object such as {\"limit\": 10}")
    unknown = sorted(set(args) - ARGUMENTS)
    if unknown:
        raise UsageError(f"unknown argument '{unknown[0]}'; the arguments are: {', '.join(sorted(ARGUMENTS))}")
    return args


def csv_path(args: dict) -> Path:
    path = args.get("path")
    if path is None:
        base = os.environ.get("SKILL_DIR") or str(Path(__file__).resolve().parent.parent)
        return Path(base) / "assets" / "sample.csv"
    if not isinstance(path, str) or not path.strip():
        raise UsageError("'path' must be a non-empty string naming a CSV file")
    return Path(path)


def sort_key(value: str):
    """Numbers sort as numbers and before text; empty cells sort last."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1 if value else 2, 0.0, value)


def report(args: dict) -> str:
    try:
        from tabulate import tabulate
    except ImportError:
        raise UsageError(
            "the tabulate package is missing: run this skill through sandboxrun, which builds "
            "its image with it (sandboxrun build csv-report)"
        ) from None

    fmt = args.get("format", "github")
    if fmt not in FORMATS:
        raise UsageError(f"'format' must be one of: {', '.join(FORMATS)}")
    limit = args.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"'limit' must be a whole number from 1 to {MAX_LIMIT}")
    descending = args.get("descending", False)
    if not isinstance(descending, bool):
        raise UsageError("'descending' must be true or false")

    path = csv_path(args)
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = list(reader)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None
    if not header:
        raise UsageError(f"{path} is empty; a header row is needed")

    columns = args.get("columns", header)
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise UsageError("'columns' must be a non-empty list of column names")
    missing = [c for c in columns if c not in header]
    if missing:
        raise UsageError(f"unknown column '{missing[0]}'; the columns are: {', '.join(header)}")
    index = [header.index(c) for c in columns]

    sort = args.get("sort")
    if sort is not None:
        if sort not in header:
            raise UsageError(f"unknown sort column '{sort}'; the columns are: {', '.join(header)}")
        at = header.index(sort)
        rows.sort(key=lambda r: sort_key(r[at] if at < len(r) else ""), reverse=descending)

    shown = [[r[i] if i < len(r) else "" for i in index] for r in rows[:limit]]
    table = tabulate(shown, headers=columns, tablefmt=fmt, disable_numparse=False)
    if len(rows) > limit:
        table += f"\n({len(rows) - limit} more rows not shown; raise 'limit' to see them)"
    return table


def main() -> int:
    try:
        print(report(read_args()))
    except UsageError as exc:
        print(f"report.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
