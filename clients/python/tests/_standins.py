"""Puts the framework stand-ins (tests/standins) first on sys.path, so the
adapters import them as they would import the frameworks."""

from __future__ import annotations

import sys
from pathlib import Path

STANDINS = Path(__file__).resolve().parent / "standins"
if str(STANDINS) not in sys.path:
    sys.path.insert(0, str(STANDINS))
