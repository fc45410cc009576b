"""The adapters' framework-free parts: sandbox paths, globs, pages of a file.
No server needed."""

from __future__ import annotations

import io
import tarfile
import unittest

import _harness  # noqa: F401 - the package under test on sys.path
from sandboxrun.integrations import _text
from sandboxrun.integrations._paths import Glob, PathError, to_abs, to_rel
from sandboxrun.integrations._session import shell_command


class Paths(unittest.TestCase):
    def test_to_rel(self) -> None:
        for path, rel in (("/workspace", ""), ("/workspace/", ""), ("/workspace/a/b.txt", "a/b.txt"),
                          ("//workspace//a/./b.txt", "a/b.txt")):
            self.assertEqual(to_rel(path), rel, path)
            self.assertEqual(to_abs(rel), "/workspace" + ("/" + rel if rel else ""))
        for path, code in (("a.txt", "invalid_path"), ("/workspace/../etc/passwd", "invalid_path"), ("", "invalid_path"),
                           ("/workspace/a\x00b", "invalid_path"), ("/etc/passwd", "outside"), ("/workspaces/x", "outside"),
                           ("/tmp", "outside")):
            with self.subTest(path=path), self.assertRaises(PathError) as cm:
                to_rel(path)
            self.assertEqual(cm.exception.code, code)

    def test_shell_command(self) -> None:
        self.assertEqual(shell_command(["sh", "-lc", "echo a && echo b"]), "echo a && echo b")
        self.assertEqual(shell_command(["bash", "-c", "ls"]), "ls")
        self.assertEqual(shell_command(["printf", "%s", "two words", "$HOME"]), "printf %s 'two words' '$HOME'")
        self.assertEqual(shell_command(["sh", "-lc", "a", "extra"]), "sh -lc a extra")


class Globs(unittest.TestCase):
    def test_matching(self) -> None:
        cases = [
            ("*.py", "a/b/c.py", True), ("*.py", ".h/c.py", True), ("*.py", "a/.c.py", False), (".c.py", "a/.c.py", True),
            ("/*.py", "c.py", True), ("/*.py", "a/c.py", False), ("a/*.py", "a/c.py", True), ("a/*.py", "a/b/c.py", False),
            ("a/**/*.py", "a/c.py", True), ("a/**/*.py", "a/b/d/c.py", True), ("a/**/*.py", "a/.b/c.py", False),
            ("a/**", "a/b/c", True), ("a/**", "a/.env", False), ("?.txt", "x.txt", True), ("?.txt", "xy.txt", False),
            ("[ab].txt", "b.txt", True), ("[!ab].txt", "b.txt", False), ("[]x].txt", "].txt", True),
            ("*.{py,md}", "r/x.md", True), ("{a,b{c,d}}.txt", "bd.txt", True), ("{a,b{c,d}}.txt", "b.txt", False),
            ("a.(1)+", "a.(1)+", True), ("*", ".env", False),
        ]
        for pattern, path, want in cases:
            with self.subTest(pattern=pattern, path=path):
                self.assertEqual(Glob(pattern).match(path), want)

    def test_refused_patterns(self) -> None:
        for pattern in ("../*", "a/../b", "[z-a]", "{" + ",".join("abcdefghijklmnopq") + "}{" + ",".join("abcdefghijklmnopq") + "}"):
            with self.subTest(pattern=pattern), self.assertRaises(ValueError):
                Glob(pattern)


class Pages(unittest.TestCase):
    def test_a_line_longer_than_the_cap_is_shown_cut_and_the_read_advances(self) -> None:
        p = _text.page(("x" * 100 + "\nshort\n").encode(), 0, 10, cap=40)
        self.assertTrue(p.content.startswith("x" * 40))
        self.assertIn("cut at 40 bytes", p.content)
        self.assertEqual((p.start_line, p.end_line, p.next_offset, p.total_lines), (1, 1, 1, 2))

    def test_lines_that_fill_the_cap_stop_the_page_before_it(self) -> None:
        p = _text.page(b"aaaa\nbbbb\ncccc\n", 0, 10, cap=10)
        self.assertEqual(p.content.split("\n\n")[0], "aaaa\nbbbb")
        self.assertEqual(p.next_offset, 2)

    def test_binary_past_the_preview_is_an_error(self) -> None:
        self.assertIn("exceeds", _text.page(b"\x00" * (_text.MAX_BINARY_BYTES + 1), 0, 10).error or "")

    def test_grep_over_a_tar(self) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for name, data in (("a/x.txt", b"needle\nhay\nneedle two\n"), ("b.txt", b"needle"), ("c.bin", b"\x00needle")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        found, cut = _text.grep_tar(buf.getvalue(), "needle", "", None, None)
        self.assertEqual([(m.rel, m.line) for m in found], [("a/x.txt", 1), ("a/x.txt", 3), ("b.txt", 1)])
        self.assertFalse(cut)
        found, cut = _text.grep_tar(buf.getvalue(), "needle", "a", "*.txt", 1)
        self.assertEqual(([(m.rel, m.line) for m in found], cut), ([("a/x.txt", 1)], True))


if __name__ == "__main__":
    unittest.main()
