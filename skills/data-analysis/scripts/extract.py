#!/usr/bin/env python3
"""Rows of a CSV file, optionally filtered and narrowed to some columns.

Arguments (JSON on stdin): path (optional, default the bundled sample),
filter (optional: column plus equals or contains), columns (optional list),
limit (optional, default 100, at most 10000).
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # the skill folder is read-only in the sandbox
sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from common import UsageError, check_columns, csv_path, read_args, read_csv, run, string_list  # noqa: E402

DEFAULT_LIMIT = 100
MAX_LIMIT = 10000
OPERATORS = ("equals", "contains")


def parse_filter(value) -> tuple[str, str, str] | None:
    """(column, operator, text) from the filter argument, or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("column"), str):
        raise UsageError("'filter' must be an object with 'column' and one of: equals, contains")
    ops = [op for op in OPERATORS if op in value]
    extra = sorted(set(value) - {"column", *OPERATORS})
    if len(ops) != 1 or extra:
        raise UsageError("'filter' needs 'column' and exactly one of: equals, contains")
    text = value[ops[0]]
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise UsageError(f"'filter.{ops[0]}' must be a string (CSV cells are text)")
    return value["column"], ops[0], text


def parse_limit(value) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LIMIT:
        raise UsageError(f"'limit' must be a whole number from 1 to {MAX_LIMIT}")
    return value


def main() -> dict:
    args = read_args({"path", "filter", "columns", "limit"})
    path = csv_path(args)
    flt = parse_filter(args.get("filter"))
    keep = string_list(args, "columns")
    limit = parse_limit(args.get("limit"))
    header, rows = read_csv(path)
    check_columns([flt[0]] if flt else [], header, path)
    check_columns(keep or [], header, path)

    matched, out = 0, []
    for row in rows:
        if flt:
            column, op, text = flt
            cell = row[column]
            if (op == "equals" and cell != text) or (op == "contains" and text not in cell):
                continue
        matched += 1
        if len(out) < limit:
            out.append({c: row[c] for c in keep} if keep else row)
    return {"path": str(path), "matched": matched, "rows": out, "truncated": matched > len(out)}


if __name__ == "__main__":
    sys.exit(run(main))
