#!/usr/bin/env python3
"""Summary statistics of the numeric columns of a CSV file.

Arguments (JSON on stdin): path (optional, default the bundled sample),
columns (optional list; default every numeric column).
"""

import math
import statistics
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # the skill folder is read-only in the sandbox
sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from common import UsageError, check_columns, csv_path, read_args, read_csv, run, string_list  # noqa: E402


def number(text: str) -> int | float | None:
    """A finite number, or None. Python also reads '1_000', 'nan' and 'inf'
    as numbers; no CSV means them as such."""
    if "_" in text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def numbers(rows: list[dict[str, str]], column: str) -> list[int | float] | None:
    """The column's non-empty cells as numbers, or None if one is not a number."""
    values = []
    for row in rows:
        cell = row[column]
        if cell == "":
            continue
        value = number(cell)
        if value is None:
            return None
        values.append(value)
    return values


def summary(values: list[int | float]) -> dict:
    return {
        "count": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "stdev": statistics.stdev(values) if len(values) >= 2 else None,
    }


def main() -> dict:
    args = read_args({"path", "columns"})
    path = csv_path(args)
    requested = string_list(args, "columns")
    header, rows = read_csv(path)
    if requested is not None:
        check_columns(requested, header, path)
    columns, non_numeric = {}, []
    for column in requested or header:
        values = numbers(rows, column)
        if not values:
            if requested is not None:
                raise UsageError(f"column '{column}' of {path} does not hold only numbers")
            non_numeric.append(column)
            continue
        columns[column] = summary(values)
    return {"path": str(path), "rows": len(rows), "columns": columns, "non_numeric": non_numeric}


if __name__ == "__main__":
    sys.exit(run(main))
