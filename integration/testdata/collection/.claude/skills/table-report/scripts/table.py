#!/usr/bin/env -S uv run --script
# /// script
# requires-python = """>=3.9"""
# dependencies = [
#   "tabulate>=0.8",  # satisfied by Debian's python3-tabulate
# ]
#
# [tool.uv]
# exclude-newer = 2025-01-01T00:00:00Z
# sources = { tabulate = { index = "internal" } }
#
# [[tool.uv.index]]
# name = "internal"
# url = "https://pypi.internal.example/simple"
# explicit = true
#
# [[tool.uv.index]]
# name = "mirror"
# url = """https://mirror.example/simple"""
# ///
"""A CSV file, named on the command line, as a Markdown table."""

import csv
import sys

sys.dont_write_bytecode = True

from tabulate import tabulate  # noqa: E402

with open(sys.argv[1], newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
print(tabulate(rows[1:], headers=rows[0], tablefmt="github"))
