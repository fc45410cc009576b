#!/usr/bin/env python3
"""Summarise the numeric columns of a CSV file named on the command line."""

import argparse
import csv
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True

LABELS = json.loads((Path(__file__).parent / "labels.json").read_text())


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--input", required=True, help="CSV file with a header row")
    ap.add_argument("--top", type=int, default=5, help="rows to show")
    ap.add_argument("--column", action="append", default=[], help="summarise only this column")
    ap.add_argument("--sort", help="order the top rows by this column, largest first")
    args = ap.parse_args(argv)

    with open(args.input, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{args.input}: no rows")
    columns = args.column or [c for c in rows[0] if all(number(r[c]) is not None for r in rows)]
    summary = {}
    for c in columns:
        values = [number(r[c]) for r in rows]
        summary[c] = {
            LABELS["count"]: len(values),
            LABELS["sum"]: round(sum(values), 4),
            LABELS["mean"]: round(sum(values) / len(values), 4),
            LABELS["min"]: min(values),
            LABELS["max"]: max(values),
        }
    if args.sort:
        rows.sort(key=lambda r: number(r[args.sort]) or 0, reverse=True)
    print(json.dumps({"file": args.input, "columns": summary, "top": rows[: args.top]}))


if __name__ == "__main__":
    main(sys.argv[1:])
