#!/usr/bin/env python3
"""Exit 1 and name the placeholders a filled form still has."""

import re
import sys

left = sorted(set(re.findall(r"\{\{(\w+)\}\}", open(sys.argv[1], encoding="utf-8").read())))
if left:
    sys.exit("unfilled: " + ", ".join(left))
print("complete")
