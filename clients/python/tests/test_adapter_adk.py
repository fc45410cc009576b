"""sandboxrun.integrations.adk against a real server: an ADK code execution
with input files that writes an output file, stateless and stateful.

google-adk is not installable here; tests/standins/google/adk holds the
classes of google.adk.code_executors (1.x shapes), imported in its place.
"""

from __future__ import annotations

import base64
import unittest
from typing import Optional

import _adapters
from google.adk.code_executors import BaseCodeExecutor, CodeExecutionInput, CodeExecutionResult, File
from sandboxrun import Client, NotFoundError
from sandboxrun.integrations.adk import SandboxrunCodeExecutor

srv: Optional[_adapters.AdapterServer] = None

CODE = """
import csv, json, os
rows = list(csv.DictReader(open('sales.csv')))
total = sum(float(r['price']) * int(r['qty']) for r in rows)
os.makedirs('out', exist_ok=True)
with open('out/summary.json', 'w') as f:
    f.write(json.dumps({'rows': len(rows), 'total': total}))
print('total', total)
"""


def setUpModule() -> None:
    global srv
    srv = _adapters.AdapterServer()


def tearDownModule() -> None:
    if srv is not None:
        srv.stop()


def executor(**kw: object) -> SandboxrunCodeExecutor:
    assert srv is not None
    return SandboxrunCodeExecutor(skill=_adapters.SKILL, url=srv.url, **kw)


def live_sessions() -> set:
    assert srv is not None
    return {s.id for s in Client(srv.url).list_sessions()}


class Execute(unittest.TestCase):
    def test_input_files_in_output_file_out(self) -> None:
        ex = executor()
        self.assertIsInstance(ex, BaseCodeExecutor)
        before = live_sessions()
        csv_text = "item,price,qty\npen,1.5,10\nbook,12,2\n"
        res = ex.execute_code(None, CodeExecutionInput(code=CODE, input_files=[
            File(name="sales.csv", content=base64.b64encode(csv_text.encode()).decode(), mime_type="text/csv"),
            File(name="raw.bin", content=b"\x00raw bytes", mime_type="application/octet-stream"),
        ]))
        self.assertIsInstance(res, CodeExecutionResult)
        self.assertEqual((res.stdout, res.stderr), ("total 39.0\n", ""))
        self.assertEqual([(f.name, f.mime_type) for f in res.output_files], [("out/summary.json", "application/json")])
        self.assertEqual(base64.b64decode(res.output_files[0].content), b'{"rows": 2, "total": 39.0}')
        self.assertEqual(live_sessions(), before)  # a stateless call leaves no session behind

    def test_input_files_that_the_code_does_not_change_are_not_outputs(self) -> None:
        res = executor().execute_code(None, CodeExecutionInput(
            code="open('copy.txt', 'w').write(open('in.txt').read() * 2)",
            input_files=[File(name="in.txt", content=base64.b64encode(b"ab").decode())]))
        self.assertEqual([(f.name, base64.b64decode(f.content)) for f in res.output_files], [("copy.txt", b"abab")])

    def test_a_failure_reaches_adk_as_stderr(self) -> None:
        ex = executor(timeout=2)
        crash = ex.execute_code(None, CodeExecutionInput(code="print('before'); raise SystemExit(4)"))
        self.assertEqual(crash.stdout, "before\n")
        self.assertIn("exited with status 4", crash.stderr)
        trace = ex.execute_code(None, CodeExecutionInput(code="1/0"))
        self.assertIn("ZeroDivisionError", trace.stderr)
        slow = ex.execute_code(None, CodeExecutionInput(code="import time; print('up', flush=True); time.sleep(30)"))
        self.assertEqual(slow.stdout, "up\n")
        self.assertIn("Timeout", slow.stderr)
        bad = ex.execute_code(None, CodeExecutionInput(code="print(1)", input_files=[File(name="../escape.txt", content="")]))
        self.assertIn("sandboxrun:", bad.stderr)
        self.assertEqual(bad.stdout, "")

    def test_output_past_the_operator_limit_is_cut_and_said(self) -> None:
        res = executor().execute_code(None, CodeExecutionInput(code="print('y' * 10000)"))
        self.assertIn("[sandboxrun: stdout truncated at 4096 bytes", res.stdout)
        self.assertEqual(res.stderr, "")


class Stateful(unittest.TestCase):
    def test_one_session_per_execution_id_kept_until_close(self) -> None:
        ex = executor(stateful=True)
        first = ex.execute_code(None, CodeExecutionInput(code="open('state.txt', 'w').write('kept')", execution_id="adk-1"))
        self.assertEqual(first.stderr, "")
        again = ex.execute_code(None, CodeExecutionInput(code="print(open('state.txt').read())", execution_id="adk-1"))
        self.assertEqual((again.stdout, again.output_files), ("kept\n", []))
        other = ex.execute_code(None, CodeExecutionInput(code="import os; print(os.path.exists('state.txt'))", execution_id="adk-2"))
        self.assertEqual(other.stdout, "False\n")
        kept = ex.kept_sessions()
        self.assertEqual(set(kept), {"adk-1", "adk-2"})
        self.assertTrue(set(kept.values()) <= live_sessions())
        ex.close()
        assert srv is not None
        for sid in kept.values():
            with self.assertRaises(NotFoundError):
                Client(srv.url).get_session(sid)

    def test_skill_is_required(self) -> None:
        with self.assertRaises((TypeError, ValueError)):
            SandboxrunCodeExecutor(url="http://127.0.0.1:1")


if __name__ == "__main__":
    unittest.main()
