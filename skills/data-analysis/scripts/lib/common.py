"""Helpers shared by stats.py and extract.py: arguments, paths, CSV reading.

This folder is not an entry point; the scripts put it on sys.path.
"""

import csv
import json
import os
import sys
from pathlib import Path


class UsageError(Exception):
    """A problem with the input: reported on stderr, exit status 1."""


def run(main) -> int:
    """Run main(), print its result as JSON, and turn UsageError into exit 1."""
    prog = Path(sys.argv[0]).name
    try:
        result = main()
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def read_args(allowed: set[str]) -> dict:
    """Read the JSON object of arguments from stdin; empty input is {}."""
    raw = sys.stdin.read()
    if not raw.strip():
        return {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"standard input is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(args, dict):
        raise UsageError("the arguments must be a JSON object with keys such as path")
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise UsageError(
            f"unknown argument '{unknown[0]}'; the arguments are: {', '.join(sorted(allowed))}"
        )
    return args


def skill_dir() -> Path:
    """The skill folder: $SKILL_DIR in the sandbox, else found from this file."""
    env = os.environ.get("SKILL_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent


def csv_path(args: dict) -> Path:
    """The CSV to read: args['path'] relative to the working directory
    (/workspace in the sandbox) or absolute; the bundled sample by default."""
    path = args.get("path")
    if path is None:
        return skill_dir() / "assets" / "sample.csv"
    if not isinstance(path, str) or not path.strip():
        raise UsageError("'path' must be a non-empty string naming a CSV file")
    return Path(path)


def string_list(args: dict, key: str) -> list[str] | None:
    """args[key] as a list of strings, or None when absent."""
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"'{key}' must be a list of column names")
    if not value:
        raise UsageError(f"'{key}' is empty; list at least one column or leave it out")
    return value


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Read a CSV with a header row into (header, rows); cells are trimmed."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            if not header:
                raise UsageError(f"{path} is empty; it needs a header row")
            dupes = sorted({h for h in header if header.count(h) > 1})
            if dupes:
                raise UsageError(f"{path} has the column '{dupes[0]}' more than once; rename one")
            rows = []
            for record in reader:
                if not any(cell.strip() for cell in record):
                    continue
                if len(record) > len(header):
                    raise UsageError(
                        f"{path} line {reader.line_num} has {len(record)} cells "
                        f"but the header has {len(header)}"
                    )
                rows.append(
                    {h: (record[i].strip() if i < len(record) else "") for i, h in enumerate(header)}
                )
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None
    except csv.Error as exc:
        raise UsageError(f"{path} is not valid CSV: {exc}") from None
    return header, rows


def check_columns(requested: list[str], header: list[str], path: Path) -> None:
    """Fail naming the first requested column the CSV does not have."""
    for column in requested:
        if column not in header:
            raise UsageError(
                f"{path} has no column '{column}'; its columns are: {', '.join(header)}"
            )
