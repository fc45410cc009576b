"""sandboxrun.integrations.deepagents against a real server: every method of
SandboxBackendProtocol, sync and async, with the protocol's error codes.

Deep Agents itself is not installable here; tests/standins/deepagents holds
its protocol module's classes (deepagents 0.7.x shapes), which the adapter
imports in its place.
"""

from __future__ import annotations

import asyncio
import os
import unittest
from typing import Optional

import _adapters
from deepagents.backends.protocol import (
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
    ReadResult,
    SandboxBackendProtocol,
)
from sandboxrun import Client, NotFoundError, SandboxrunError
from sandboxrun.integrations.deepagents import SandboxrunBackend

srv: Optional[_adapters.AdapterServer] = None
W = "/workspace"


def setUpModule() -> None:
    global srv
    srv = _adapters.AdapterServer()


def tearDownModule() -> None:
    if srv is not None:
        srv.stop()


def backend(**kw: object) -> SandboxrunBackend:
    assert srv is not None
    return SandboxrunBackend(_adapters.SKILL, url=srv.url, **kw)  # type: ignore[arg-type]


class Shared(unittest.TestCase):
    """One backend (one session) for the whole class, as an agent keeps one."""

    sb: SandboxrunBackend

    @classmethod
    def setUpClass(cls) -> None:
        cls.sb = backend()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sb.close()


class Execute(Shared):
    def test_is_the_protocol_and_names_its_session(self) -> None:
        self.assertIsInstance(self.sb, SandboxBackendProtocol)
        self.assertEqual(self.sb.client.get_session(self.sb.id).id, self.sb.id)

    def test_output_is_stdout_then_stderr_with_the_exit_code(self) -> None:
        res = self.sb.execute("echo out; echo err >&2; python3 -c 'import sys; sys.exit(3)'")
        self.assertIsInstance(res, ExecuteResponse)
        self.assertEqual((res.output, res.exit_code, res.truncated), ("out\nerr\n", 3, False))

    def test_commands_share_the_workspace_with_the_file_tools(self) -> None:
        self.assertIsNone(self.sb.write(f"{W}/shared/from-tool.txt", "written by write").error)
        res = self.sb.execute("cat shared/from-tool.txt && echo made by a command > shared/from-cmd.txt")
        self.assertEqual((res.output, res.exit_code), ("written by write", 0))
        self.assertEqual(self.sb.download_files([f"{W}/shared/from-cmd.txt"])[0].content, b"made by a command\n")

    def test_a_command_outside_allowed_tools_is_refused_with_126_and_never_runs(self) -> None:
        res = self.sb.execute("echo hi > gone.txt; rm -rf shared")
        self.assertEqual(res.exit_code, 126)
        self.assertIn("rm -rf shared", res.output)
        self.assertIn("Bash(rm:*)", res.output)
        self.assertEqual(self.sb.download_files([f"{W}/gone.txt"])[0].error, "file_not_found")

    def test_timeout_reports_124_with_the_partial_output(self) -> None:
        res = self.sb.execute("echo started; sleep 30", timeout=2)
        self.assertEqual(res.exit_code, 124)
        self.assertTrue(res.output.startswith("started\n"), res.output)
        self.assertIn("timed out after 2 seconds", res.output)

    def test_output_past_the_operator_limit_is_truncated_and_says_so(self) -> None:
        res = self.sb.execute("python3 -c \"print('x' * 10000)\"")
        self.assertTrue(res.truncated)
        self.assertEqual(res.exit_code, 0)
        self.assertIn("stdout truncated at 4096 bytes", res.output)
        self.assertLess(len(res.output), 5000)

    def test_empty_command_and_negative_timeout(self) -> None:
        self.assertEqual(self.sb.execute("  ").exit_code, 1)
        with self.assertRaises(ValueError):
            self.sb.execute("echo x", timeout=-1)


class Transfers(Shared):
    def test_upload_then_download_in_order(self) -> None:
        files = [(f"{W}/t/{i}.txt", f"content {i}".encode()) for i in range(3)]
        self.assertEqual(self.sb.upload_files(files), [FileUploadResponse(path=p, error=None) for p, _ in files])
        self.assertEqual(self.sb.download_files([p for p, _ in files]),
                         [FileDownloadResponse(path=p, content=c, error=None) for p, c in files])

    def test_a_one_mebibyte_binary_file_round_trips_byte_for_byte(self) -> None:
        data = os.urandom(1 << 20)
        path = f"{W}/big/blob.bin"
        self.assertEqual(self.sb.upload_files([(path, data)]), [FileUploadResponse(path=path, error=None)])
        self.assertEqual(self.sb.execute("wc -c < big/blob.bin").output.strip(), str(1 << 20))
        self.assertEqual(self.sb.download_files([path]), [FileDownloadResponse(path=path, content=data, error=None)])

    def test_error_codes(self) -> None:
        self.sb.upload_files([(f"{W}/codes/dir/inner.txt", b"x")])
        self.assertEqual(self.sb.execute("ln -s inner.txt codes/dir/link").exit_code, 0)
        cases = [
            (f"{W}/codes/missing.txt", "file_not_found"),
            (f"{W}/codes/dir", "is_directory"),
            (f"{W}/codes/dir/link", "permission_denied"),  # links are never followed
            ("/etc/hostname", "permission_denied"),  # outside the workspace
            ("codes/relative.txt", "invalid_path"),
            (f"{W}/codes/../escape.txt", "invalid_path"),
        ]
        got = self.sb.download_files([p for p, _ in cases])
        self.assertEqual(got, [FileDownloadResponse(path=p, content=None, error=code) for p, code in cases])
        ups = self.sb.upload_files([(f"{W}/codes/dir", b"x"), ("/tmp/x", b"x"), ("rel.txt", b"x"), (f"{W}/a/../b", b"x")])
        self.assertEqual([u.error for u in ups], ["is_directory", "permission_denied", "invalid_path", "invalid_path"])


class FileTools(Shared):
    def test_ls_lists_one_folder_with_metadata(self) -> None:
        self.sb.upload_files([(f"{W}/ls/a.txt", b"aa"), (f"{W}/ls/sub/b.txt", b"b")])
        res = self.sb.ls(f"{W}/ls")
        self.assertIsNone(res.error)
        assert res.entries is not None
        got = {(e["path"], e["is_dir"], e["size"]) for e in res.entries}
        self.assertEqual(got, {(f"{W}/ls/a.txt", False, 2), (f"{W}/ls/sub", True, 0)})
        self.assertTrue(all(e["modified_at"] for e in res.entries))
        self.assertIn("no such folder", self.sb.ls(f"{W}/ls/none").error or "")
        self.assertIn("not a folder", self.sb.ls(f"{W}/ls/a.txt").error or "")
        self.assertIn("outside /workspace", self.sb.ls("/etc").error or "")
        top = self.sb.ls(W)
        assert top.entries is not None
        self.assertIn({"path": f"{W}/ls", "is_dir": True}, [{k: e[k] for k in ("path", "is_dir")} for e in top.entries])

    def test_read_pages_lines(self) -> None:
        path = f"{W}/read/rows.txt"
        self.sb.write(path, "\n".join(f"row {i}" for i in range(1, 21)) + "\n")
        whole = self.sb.read(path)
        self.assertEqual((whole.total_lines, whole.start_line, whole.end_line, whole.next_offset), (20, 1, 20, None))
        page = self.sb.read(path, offset=10, limit=5)
        assert page.file_data is not None
        self.assertEqual(page.file_data, {"content": "row 11\nrow 12\nrow 13\nrow 14\nrow 15", "encoding": "utf-8"})
        self.assertEqual((page.start_line, page.end_line, page.next_offset, page.total_lines), (11, 15, 15, 20))
        none = self.sb.read(path, limit=0)
        self.assertTrue(none.no_lines_requested)
        self.assertIn("exceeds", self.sb.read(path, offset=50).error or "")
        self.assertEqual(self.sb.read(path, offset=-4, limit=1).file_data, {"content": "row 1", "encoding": "utf-8"})

    def test_read_binary_empty_crlf_and_missing(self) -> None:
        raw = bytes(range(256))
        self.sb.upload_files([(f"{W}/read/bin.png", raw), (f"{W}/read/empty.txt", b""), (f"{W}/read/crlf.txt", b"a\r\nb\r\n")])
        res = self.sb.read(f"{W}/read/bin.png")
        assert res.file_data is not None
        import base64
        self.assertEqual(res.file_data["encoding"], "base64")
        self.assertEqual(base64.b64decode(res.file_data["content"]), raw)
        self.assertEqual(self.sb.read(f"{W}/read/empty.txt"), ReadResult(file_data={"content": "", "encoding": "utf-8"}))
        crlf = self.sb.read(f"{W}/read/crlf.txt")
        assert crlf.file_data is not None
        self.assertEqual(crlf.file_data["content"], "a\nb")
        self.assertIn("file_not_found", self.sb.read(f"{W}/read/none.txt").error or "")
        self.assertIn("is_directory", self.sb.read(f"{W}/read").error or "")

    def test_write_keeps_every_byte_and_makes_folders(self) -> None:
        text = "Special: $VAR `cmd` $(sub) 'q' \"q\"\\n\tTab\nÜnïcødé 👋\n"
        path = f"{W}/write/deep er/file name.txt"
        self.assertEqual(self.sb.write(path, text).path, path)
        self.assertEqual(self.sb.download_files([path])[0].content, text.encode())
        self.assertIsNone(self.sb.write(path, "again").error)  # 0.7 overwrites
        self.assertEqual(self.sb.download_files([path])[0].content, b"again")
        self.assertIn("outside", self.sb.write("/etc/x", "x").error or "")

    def test_edit(self) -> None:
        path = f"{W}/edit/e.txt"
        self.sb.write(path, "Hello world\nGoodbye world\nHello again\n")
        one = self.sb.edit(path, "Goodbye", "Farewell")
        self.assertEqual((one.error, one.occurrences, one.path), (None, 1, path))
        many = self.sb.edit(path, "Hello", "Hi")
        self.assertIn("appears 2 times", many.error or "")
        self.assertEqual(self.sb.edit(path, "Hello", "Hi", replace_all=True).occurrences, 2)
        self.assertEqual(self.sb.download_files([path])[0].content, b"Hi world\nFarewell world\nHi again\n")
        self.assertIn("not found", self.sb.edit(path, "absent", "x").error or "")
        self.assertIn("not found", self.sb.edit(f"{W}/edit/none.txt", "a", "b").error or "")
        self.sb.upload_files([(f"{W}/edit/crlf.txt", b"one\r\ntwo\r\n"), (f"{W}/edit/bin", b"\x00\xff")])
        self.assertEqual(self.sb.edit(f"{W}/edit/crlf.txt", "one\ntwo", "1\n2").occurrences, 1)
        self.assertEqual(self.sb.download_files([f"{W}/edit/crlf.txt"])[0].content, b"1\r\n2\r\n")
        self.assertIn("not a text file", self.sb.edit(f"{W}/edit/bin", "a", "b").error or "")

    def test_delete(self) -> None:
        self.sb.upload_files([(f"{W}/del/d/f.txt", b"x"), (f"{W}/del/g.txt", b"y")])
        self.assertEqual(self.sb.delete(f"{W}/del/g.txt").path, f"{W}/del/g.txt")
        self.assertEqual(self.sb.delete(f"{W}/del/d").path, f"{W}/del/d")
        self.assertEqual(self.sb.ls(f"{W}/del").entries, [])
        self.assertIn("not found", self.sb.delete(f"{W}/del/g.txt").error or "")
        self.assertIn("workspace itself", self.sb.delete(W).error or "")

    def test_grep_is_literal_and_filters_by_glob(self) -> None:
        self.sb.upload_files([
            (f"{W}/grep/a.py", b"x = 1\nstr | int (a)\n"),
            (f"{W}/grep/src/b.py", b"str | int\n"),
            (f"{W}/grep/src/c.txt", b"str | int\n"),
            (f"{W}/grep/bin.dat", b"\x00str | int"),
        ])
        res = self.sb.grep("str | int", path=f"{W}/grep")
        self.assertIsNone(res.error)
        self.assertEqual([(m["path"], m["line"], m["text"]) for m in res.matches or []], [
            (f"{W}/grep/a.py", 2, "str | int (a)"), (f"{W}/grep/src/b.py", 1, "str | int"), (f"{W}/grep/src/c.txt", 1, "str | int")])
        self.assertEqual([m["path"] for m in self.sb.grep("str | int", f"{W}/grep", "*.py").matches or []],
                         [f"{W}/grep/a.py", f"{W}/grep/src/b.py"])
        self.assertEqual([m["path"] for m in self.sb.grep("str | int", f"{W}/grep", "src/*.txt").matches or []],
                         [f"{W}/grep/src/c.txt"])
        self.assertEqual(self.sb.grep("(a)", f"{W}/grep").matches, [{"path": f"{W}/grep/a.py", "line": 2, "text": "str | int (a)"}])
        capped = self.sb.grep("str", f"{W}/grep", max_count=2)
        self.assertEqual((len(capped.matches or []), capped.truncated), (2, True))
        self.assertEqual(self.sb.grep("str", f"{W}/grep/src/b.py").matches, [{"path": f"{W}/grep/src/b.py", "line": 1, "text": "str | int"}])
        self.assertEqual(self.sb.grep("nothing like it", f"{W}/grep").matches, [])

    def test_glob_follows_the_shared_contract(self) -> None:
        self.sb.upload_files([(f"{W}/glob/{p}", b"x") for p in
                              ("top.py", "src/app/main.py", "src/app/util.txt", ".github/ci.yml", ".env", ".hidden/x.py")])
        def paths(pattern: str) -> list:
            res = self.sb.glob(pattern, path=f"{W}/glob")
            self.assertIsNone(res.error, pattern)
            return [m["path"][len(W) + 6:] for m in res.matches or []]
        self.assertEqual(paths("*.py"), [".hidden/x.py", "src/app/main.py", "top.py"])
        self.assertEqual(paths("/*.py"), ["top.py"])
        self.assertEqual(paths("src/**/*.py"), ["src/app/main.py"])
        self.assertEqual(paths("**/*.py"), ["src/app/main.py", "top.py"])  # ** skips hidden folders
        self.assertEqual(paths("*.yml"), [".github/ci.yml"])
        self.assertEqual(paths(".env"), [".env"])
        # A bare pattern matches names at any depth, hidden folders included; never a dot-name.
        self.assertEqual(paths("*"), [".github/ci.yml", ".hidden/x.py", "src/app/main.py", "src/app/util.txt", "top.py"])
        self.assertEqual(paths("src/app/*.{py,txt}"), ["src/app/main.py", "src/app/util.txt"])
        self.assertEqual(paths("src/app/[mu]*.?y"), ["src/app/main.py"])
        self.assertIn("'..'", self.sb.glob("../*", path=f"{W}/glob").error or "")
        self.assertIn("no such folder", self.sb.glob("*", path=f"{W}/none").error or "")


class Async(Shared):
    def test_every_async_twin_answers_as_its_sync_method(self) -> None:
        sb = self.sb

        async def run() -> list:
            await sb.awrite(f"{W}/async/a.txt", "alpha\nbeta\n")
            return [
                await sb.aexecute("cat async/a.txt", timeout=30),
                await sb.aupload_files([(f"{W}/async/b.bin", b"\x01\x02")]),
                await sb.adownload_files([f"{W}/async/b.bin", f"{W}/async/none"]),
                await sb.als(f"{W}/async"),
                await sb.aread(f"{W}/async/a.txt", 1, 1),
                await sb.aedit(f"{W}/async/a.txt", "beta", "gamma"),
                await sb.agrep("gamma", f"{W}/async"),
                await sb.aglob("*.bin", f"{W}/async"),
                await sb.adelete(f"{W}/async/b.bin"),
            ]

        ex, up, down, ls, rd, ed, gr, gl, de = asyncio.run(run())
        self.assertEqual((ex.output, ex.exit_code), ("alpha\nbeta\n", 0))
        self.assertEqual(up, [FileUploadResponse(path=f"{W}/async/b.bin", error=None)])
        self.assertEqual([(d.content, d.error) for d in down], [(b"\x01\x02", None), (None, "file_not_found")])
        self.assertEqual(sorted(e["path"] for e in ls.entries or []), [f"{W}/async/a.txt", f"{W}/async/b.bin"])
        self.assertEqual(rd.file_data, {"content": "beta", "encoding": "utf-8"})
        self.assertEqual(ed.occurrences, 1)
        self.assertEqual(gr.matches, [{"path": f"{W}/async/a.txt", "line": 2, "text": "gamma"}])
        self.assertEqual([m["path"] for m in gl.matches or []], [f"{W}/async/b.bin"])
        self.assertIsNone(de.error)
        self.assertEqual(sb.ls(f"{W}/async").entries and [e["path"] for e in sb.ls(f"{W}/async").entries or []],
                         [f"{W}/async/a.txt"])


class Lifecycle(unittest.TestCase):
    def test_close_deletes_the_session_it_made_and_only_that(self) -> None:
        with backend(ttl="5m") as sb:
            sid = sb.id
            sb.write(f"{W}/x.txt", "x")
        with self.assertRaises(NotFoundError):
            sb.client.get_session(sid)
        assert srv is not None
        client = Client(srv.url)
        with client.create_session() as s:
            with backend(session=s) as sb2:
                self.assertEqual(sb2.id, s.id)
                sb2.write(f"{W}/y.txt", "y")
            self.assertEqual(s.download("y.txt"), b"y")  # still there: the caller's session

    def test_a_local_mode_client_is_refused_with_the_fix(self) -> None:
        with self.assertRaisesRegex(SandboxrunError, "SANDBOXRUN_URL"):
            SandboxrunBackend(_adapters.SKILL, client=Client(local=True, bin=_adapters._harness.binary()))

    def test_a_skill_is_required(self) -> None:
        with self.assertRaisesRegex(ValueError, "skill"):
            SandboxrunBackend("", url="http://127.0.0.1:1")


if __name__ == "__main__":
    unittest.main()
