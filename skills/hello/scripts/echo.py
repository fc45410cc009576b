#!/usr/bin/env python3
"""Print the JSON arguments read from stdin inside a JSON object."""

import json
import sys


def main() -> int:
    raw = sys.stdin.read()
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        print(f"echo.py: standard input is not JSON: {exc}", file=sys.stderr)
        return 1
    json.dump({"skill": "hello", "runtime": "python", "args": args}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
