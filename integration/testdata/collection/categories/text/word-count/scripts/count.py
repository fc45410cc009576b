#!/usr/bin/env python3
"""Words, lines and characters of the files named on the command line."""

import json
import sys

out = {}
for name in sys.argv[1:]:
    text = open(name, encoding="utf-8").read()
    out[name] = {"words": len(text.split()), "lines": text.count("\n"), "chars": len(text)}
print(json.dumps(out))
