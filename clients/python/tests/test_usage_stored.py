"""Usage.stored: what a token keeps on the server, as the client reads it (no server)."""

import unittest

from sandboxrun import Usage, UsageStored


class UsageStoredTest(unittest.TestCase):
    def test_stored_is_read(self) -> None:
        u = Usage.from_json(
            {
                "label": "ci",
                "windows": [],
                "total": {"runs": 0},
                "stored": {"session_bytes": 5000, "upload_bytes": 300, "bytes": 5300, "limit": 4096},
            }
        )
        self.assertEqual(u.stored, UsageStored(session_bytes=5000, upload_bytes=300, bytes=5300, limit=4096))

    def test_an_older_server_says_nothing(self) -> None:
        self.assertIsNone(Usage.from_json({"label": "ci", "windows": [], "total": {}}).stored)


if __name__ == "__main__":
    unittest.main()
