#!/usr/bin/env python3
"""Fill {{placeholders}} in a text form: --fields lists them, --set k=v fills."""

import argparse
import json
import os
import re
import sys

sys.dont_write_bytecode = True
FIELD = re.compile(r"\{\{(\w+)\}\}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("form", help="the form, relative to the working directory")
    ap.add_argument("--fields", action="store_true", help="list the fields and stop")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    text = open(args.form, encoding="utf-8").read()
    if args.fields:
        print(json.dumps({"cwd": os.getcwd(), "fields": sorted(set(FIELD.findall(text)))}))
        return
    values = dict(kv.split("=", 1) for kv in args.set)
    sys.stdout.write(FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), text))


if __name__ == "__main__":
    main(sys.argv[1:])
