"""The adapters are optional: ``import sandboxrun`` (and its integrations
package) imports no framework, and an adapter whose framework is missing says
which extra installs it. No server needed."""

from __future__ import annotations

import subprocess
import sys
import unittest

import _harness

FRAMEWORKS = ("deepagents", "google.adk", "agents")


def python(code: str) -> subprocess.CompletedProcess:
    # A fresh interpreter without the stand-ins on its path: as on a host
    # that installed the client alone.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=str(_harness.HERE.parent), check=False)


class OptionalImports(unittest.TestCase):
    def test_the_client_imports_no_framework(self) -> None:
        proc = python("import sys, sandboxrun, sandboxrun.integrations, sandboxrun.integrations._paths\n"
                      f"print([m for m in sys.modules if m.split('.')[0] in {[f.split('.')[0] for f in FRAMEWORKS]!r}])")
        self.assertEqual((proc.returncode, proc.stdout.strip()), (0, "[]"), proc.stderr)

    def test_a_missing_framework_names_its_extra(self) -> None:
        for module, extra in (("deepagents", "sandboxrun[deepagents]"), ("adk", "sandboxrun[adk]"),
                              ("openai_agents", "sandboxrun[openai-agents]")):
            with self.subTest(module=module):
                proc = python(f"import sandboxrun.integrations.{module}")
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn("ImportError", proc.stderr)
                self.assertIn(extra, proc.stderr)


if __name__ == "__main__":
    unittest.main()
