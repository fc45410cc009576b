#!/usr/bin/env python3
"""The rows of a CSV file with the largest (or smallest) values of a column.

Command-line arguments: top.py FILE --by COLUMN [-n N] [--ascending]. FILE is
relative to the working directory (/workspace in the sandbox).
"""

import argparse
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # the skill folder is read-only in the sandbox
sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from common import UsageError, check_columns, read_csv, run  # noqa: E402
from stats import number  # noqa: E402


def main() -> dict:
    ap = argparse.ArgumentParser(prog="top.py", description=__doc__.splitlines()[0])
    ap.add_argument("file", help="CSV file with a header row")
    ap.add_argument("--by", required=True, metavar="COLUMN", help="numeric column to rank by")
    ap.add_argument("-n", type=int, default=5, help="how many rows (default 5)")
    ap.add_argument("--ascending", action="store_true", help="smallest first")
    args = ap.parse_args()
    if not 1 <= args.n <= 1000:
        raise UsageError("-n must be between 1 and 1000")
    path = Path(args.file)
    header, rows = read_csv(path)
    check_columns([args.by], header, path)
    ranked = [r for r in rows if number(r[args.by]) is not None]
    ranked.sort(key=lambda r: number(r[args.by]), reverse=not args.ascending)
    return {"file": args.file, "by": args.by, "rows": ranked[: args.n]}


if __name__ == "__main__":
    sys.exit(run(main))
