"""sandboxrun.integrations.openai_agents against a real server: create, exec,
write/read, persist/hydrate as tars, and resume from a snapshot.

The Agents SDK is not installable here; tests/standins/agents holds the
classes of agents.sandbox (openai-agents 0.22 shapes) and the lifecycle
that calls a provider's hooks, imported in its place.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import tarfile
import tempfile
import unittest
from pathlib import Path
from typing import Any, Optional

import _adapters
from agents.sandbox import ExecTimeoutError, LocalSnapshotSpec, Manifest, WorkspaceReadNotFoundError
from agents.sandbox.errors import ExecTransportError, WorkspaceArchiveWriteError, WorkspaceWriteTypeError
from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
from sandboxrun import Client, NotFoundError
from sandboxrun.integrations.openai_agents import (
    SandboxrunSandboxClient,
    SandboxrunSandboxClientOptions,
    SandboxrunSandboxSessionState,
)

srv: Optional[_adapters.AdapterServer] = None


def setUpModule() -> None:
    global srv
    srv = _adapters.AdapterServer()


def tearDownModule() -> None:
    if srv is not None:
        srv.stop()


def client() -> SandboxrunSandboxClient:
    assert srv is not None
    return SandboxrunSandboxClient(url=srv.url)


def options(**kw: Any) -> SandboxrunSandboxClientOptions:
    return SandboxrunSandboxClientOptions(skill=_adapters.SKILL, **kw)


def exists(session_id: str) -> bool:
    assert srv is not None
    try:
        Client(srv.url).get_session(session_id)
    except NotFoundError:
        return False
    return True


class NotBytes:
    def read(self) -> int:
        return 42


async def read_text(session: Any, path: str) -> str:
    data = (await session.read(Path(path))).read()
    return data.decode()


class Session(unittest.TestCase):
    def test_create_exec_write_read_and_close(self) -> None:
        c = client()
        self.assertIsInstance(c, BaseSandboxClient)
        self.assertIsInstance(options(), BaseSandboxClientOptions)

        async def run() -> str:
            session = await c.create(options=options(exec_timeout_s=60))
            sid = session.state.sandboxrun_session
            async with session:
                self.assertTrue(await session.running())
                await session.write(Path("/workspace/notes/a.txt"), io.BytesIO(b"alpha\n"))
                await session.write(Path("notes/b.txt"), io.BytesIO(b"beta\n"))  # relative to the root
                res = await session.exec("cat notes/a.txt notes/b.txt; echo oops >&2; python3 -c 'raise SystemExit(2)'")
                self.assertEqual((res.stdout, res.stderr, res.exit_code, res.ok()), (b"alpha\nbeta\n", b"oops\n", 2, False))
                argv = await session.exec("printf", "%s|", "two words", "$HOME", shell=False)
                self.assertEqual(argv.stdout, b"two words|$HOME|")  # each word as given, no expansion
                await session.exec("echo from a command > notes/c.txt")
                self.assertEqual(await read_text(session, "/workspace/notes/c.txt"), "from a command\n")
                with self.assertRaises(WorkspaceReadNotFoundError):
                    await session.read(Path("/workspace/notes/none.txt"))
                await session.write(Path("s.txt"), io.StringIO("text"))  # a text stream is written as UTF-8
                self.assertEqual(await read_text(session, "s.txt"), "text")
                with self.assertRaises(WorkspaceWriteTypeError):
                    await session.write(Path("x.txt"), NotBytes())  # type: ignore[arg-type]
            return sid

        sid = asyncio.run(run())
        self.assertFalse(exists(sid))  # closing the session deleted it

    def test_refusal_timeout_truncation_and_users(self) -> None:
        async def run() -> None:
            async with await client().create(options=options()) as session:
                refused = await session.exec("curl http://example.com")
                self.assertEqual(refused.exit_code, 126)
                self.assertIn(b"Bash(curl:*)", refused.stderr)
                with self.assertRaises(ExecTimeoutError) as cm:
                    await session.exec("sleep 30", timeout=2)
                self.assertEqual(cm.exception.timeout_s, 2)
                long = await session.exec("python3 -c \"print('z' * 10000)\"")
                self.assertEqual(len(long.stdout), 4096)
                self.assertIn(b"stdout truncated at 4096 bytes", long.stderr)
                with self.assertRaises(ExecTransportError):
                    await session.exec("echo hi", user="root")

        asyncio.run(run())

    def test_rm_and_mkdir_use_the_file_api(self) -> None:
        async def run() -> None:
            async with await client().create(options=options()) as session:
                await session.mkdir("/workspace/d1/d2", parents=True)
                await session.mkdir("d1/d3")
                with self.assertRaises(WorkspaceArchiveWriteError):
                    await session.mkdir("nope/child")  # no parent, no parents=True
                await session.write(Path("d1/d2/f.txt"), io.BytesIO(b"f"))
                listing = await session.exec("ls d1")
                self.assertEqual(listing.stdout.split(), [b"d2", b"d3"])
                with self.assertRaises(WorkspaceArchiveWriteError):
                    await session.rm("d1")  # a folder needs recursive=True
                await session.rm("d1/d2/f.txt")
                await session.rm("d1", recursive=True)
                await session.rm("d1", recursive=True)  # as rm -rf: nothing to remove is fine
                self.assertEqual((await session.exec("ls")).stdout, b"")

        asyncio.run(run())


class Persistence(unittest.TestCase):
    def setUp(self) -> None:
        self.snapshots = Path(tempfile.mkdtemp(prefix="sandboxrun-agents-snapshots-"))
        self.addCleanup(shutil.rmtree, self.snapshots, True)

    def test_persist_and_hydrate_are_workspace_tars(self) -> None:
        async def run() -> None:
            c = client()
            async with await c.create(options=options()) as a, await c.create(options=options()) as b:
                await a.write(Path("src/main.py"), io.BytesIO(b"print('hi')\n"))
                await a.write(Path("data/blob.bin"), io.BytesIO(bytes(range(256)) * 64))
                archive = await a.persist_workspace()
                raw = archive.read()
                with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
                    names = sorted(m.name.rstrip("/") for m in tf)
                self.assertEqual(names, ["data", "data/blob.bin", "src", "src/main.py"])  # workspace-relative
                await b.hydrate_workspace(io.BytesIO(raw))
                self.assertEqual((await b.read(Path("data/blob.bin"))).read(), bytes(range(256)) * 64)
                self.assertEqual((await b.exec("python3 src/main.py")).stdout, b"hi\n")
                with self.assertRaises(WorkspaceArchiveWriteError):
                    await b.hydrate_workspace(io.BytesIO(b"not a tar"))

        asyncio.run(run())

    def test_resume_from_a_snapshot_after_the_session_is_gone(self) -> None:
        c = client()
        spec = LocalSnapshotSpec(base_path=self.snapshots)

        async def first() -> dict:
            session = await c.create(snapshot=spec, options=options(ttl="10m"))
            async with session:
                await session.write(Path("work/progress.txt"), io.BytesIO(b"step 1 done\n"))
                await session.exec("echo step 2 done >> work/progress.txt")
            # aclose persisted the workspace into the snapshot, then deleted the session
            self.assertFalse(exists(session.state.sandboxrun_session))
            return c.serialize_session_state(session.state)

        payload = asyncio.run(first())
        self.assertEqual(payload["type"], "sandboxrun")
        self.assertNotIn("token", str(payload))

        async def second() -> None:
            state = c.deserialize_session_state(payload)
            self.assertIsInstance(state, SandboxrunSandboxSessionState)
            old = state.sandboxrun_session
            session = await c.resume(state)
            async with session:
                self.assertNotEqual(session.state.sandboxrun_session, old)  # a new session...
                self.assertEqual(await read_text(session, "work/progress.txt"), "step 1 done\nstep 2 done\n")  # ...filled
                await session.exec("echo step 3 done >> work/progress.txt")

        asyncio.run(second())

    def test_resume_reattaches_to_a_kept_session_and_restores_a_snapshot_over_a_new_one(self) -> None:
        c = client()
        spec = LocalSnapshotSpec(base_path=self.snapshots)

        async def run() -> None:
            session = await c.create(snapshot=spec, options=options(keep_on_shutdown=True))
            sid = session.state.sandboxrun_session
            async with session:
                await session.write(Path("kept.txt"), io.BytesIO(b"v1"))
            self.assertTrue(exists(sid))  # kept: resume reattaches
            again = await c.resume(session.state)
            async with again:
                self.assertEqual(again.state.sandboxrun_session, sid)
                self.assertEqual(await read_text(again, "kept.txt"), "v1")
                await again.write(Path("kept.txt"), io.BytesIO(b"v2"))
            await c.delete(again)
            self.assertFalse(exists(sid))
            # Gone now: a resume makes a new session and restores the last snapshot into it.
            last = await c.resume(again.state)
            async with last:
                self.assertEqual(await read_text(last, "kept.txt"), "v2")
                self.assertNotEqual(last.state.sandboxrun_session, sid)
            await c.delete(last)

        asyncio.run(run())

    def test_a_restore_clears_what_the_snapshot_does_not_hold(self) -> None:
        c = client()
        spec = LocalSnapshotSpec(base_path=self.snapshots)
        assert srv is not None

        async def run() -> None:
            session = await c.create(snapshot=spec, options=options(keep_on_shutdown=True))
            async with session:
                await session.write(Path("keep/me.txt"), io.BytesIO(b"snapshotted"))
            sid = session.state.sandboxrun_session
            Client(srv.url).put_file(sid, "stray/after.txt", "written after the snapshot")
            session.state.workspace_root_ready = False  # as after an unclean stop: restore, do not trust
            again = await c.resume(session.state)
            async with again:
                self.assertEqual(again.state.sandboxrun_session, sid)
                self.assertEqual(sorted(f.path for f in Client(srv.url).list_files(sid)), ["keep", "keep/me.txt"])
            await c.delete(again)

        asyncio.run(run())

    def test_options_and_manifest_checks(self) -> None:
        with self.assertRaises(TypeError):
            options().skill = "other"  # options are frozen, as the SDK's are
        c = client()
        with self.assertRaisesRegex(ValueError, "/workspace"):
            asyncio.run(c.create(manifest=Manifest(root="/home/user"), options=options()))
        with self.assertRaises(TypeError):
            asyncio.run(c.resume(object()))  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
