// The client against a real `sandboxrun serve` and the real engine: every
// method, streaming, every error status, unix sockets, the spec coverage.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import {
  Client,
  OPERATIONS,
  AuthError,
  BadRequestError,
  BusyError,
  ConflictError,
  RequestTimeoutError,
  NotFoundError,
  RefusedError,
  ServerError,
  TooLargeError,
  UnavailableError,
  UnsupportedMediaError,
  SandboxrunError,
  TransportError,
  errorForStatus,
} from '../dist/index.js';
import { repo, TOKEN, requireEngine, tempDir, makeSkill, startServer, tar } from './harness.mjs';

requireEngine();

const spec = JSON.parse(readFileSync(join(repo, 'server', 'openapi.json'), 'utf8'));

const PROBE = `import json, os, sys
args = json.loads(sys.stdin.read() or "{}")
print(json.dumps({"args": args, "argv": sys.argv[1:], "env": os.environ.get("PROBE_VAR", "")}))
print("to stderr", file=sys.stderr)
`;
const SLOW = `import sys, time
print("started", flush=True)
time.sleep(60)
`;
const WRITE = `open("made.txt", "w").write("made by the run")
print(open("in.txt").read())
`;

const skillsRoot = tempDir('skills');
const killSkill = `tsgo-kill-${process.pid}`;
makeSkill(skillsRoot, 'tsgo-probe', { 'probe.py': PROBE, 'slow.py': SLOW, 'write.py': WRITE }, 'allowed-tools: Bash(echo:*) Bash(python3:*)\n');
makeSkill(skillsRoot, killSkill, { 'slow.py': SLOW });
const skills = `${join(repo, 'skills')}:${skillsRoot}`;

let main; // tokens, sessions, a small quota
let busy; // one slot, no queue wait, on a unix socket
let down; // an engine that is not there
let c;
const policy = join(skillsRoot, '..', `tsgo-policy-${process.pid}.yaml`);

before(async () => {
  writeFileSync(policy, 'sessions:\n  quota: 64Ki\n');
  [main, busy, down] = await Promise.all([
    startServer({ skills, ready: true, tokens: true, sessions: true, args: ['--policy', policy] }),
    startServer({ skills, unix: true, args: ['--max-running', '1', '--queue-wait', '1ms', '--warm-pool', '0'] }),
    startServer({ skills, env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } }),
  ]);
  c = new Client({ url: main.url, token: TOKEN });
});

after(async () => {
  await Promise.all([main?.stop(), busy?.stop(), down?.stop()]);
  rmSync(skillsRoot, { recursive: true, force: true });
  rmSync(policy, { force: true });
});

async function rejects(promise, Cls, check) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
    assert.ok(err instanceof SandboxrunError);
    assert.ok(err.message.length > 0);
    check?.(err);
    return err;
  }
  assert.fail(`expected ${Cls.name}, the call succeeded`);
}

describe('the spec', () => {
  it('every operation of server/openapi.json has a client call with its method and path', () => {
    const seen = new Set();
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'parameters') continue;
        const mine = OPERATIONS[op.operationId];
        assert.ok(mine, `the client has no call for ${method.toUpperCase()} ${path} (${op.operationId})`);
        assert.equal(mine.method, method.toUpperCase(), op.operationId);
        assert.equal(mine.path, path, op.operationId);
        seen.add(op.operationId);
      }
    }
    assert.deepEqual([...Object.keys(OPERATIONS)].sort(), [...seen].sort());
  });

  it('every field of every schema is in the client types', () => {
    const src = readFileSync(new URL('../src/types.ts', import.meta.url), 'utf8');
    const fields = {};
    for (const m of src.matchAll(/export interface (\w+) \{([\s\S]*?)\n\}/g)) {
      fields[m[1]] = new Set([...m[2].matchAll(/^\s+(\w+)\??:/gm)].map((x) => x[1]));
    }
    const names = { Error: 'ErrorBody', Session: 'SessionInfo' };
    const wrapped = {
      SkillList: ['skills'], SessionList: ['partial', 'sessions', 'unreachable'], StoredFiles: ['files'], FileList: ['files'], SessionCreate: ['from', 'ttl'],
      SnapshotList: ['snapshots'], SnapshotCreate: ['label'], RestoreRequest: ['snapshot'], UsageAll: ['tenants'],
    };
    for (const [name, schema] of Object.entries(spec.components.schemas)) {
      const props = Object.keys(schema.properties ?? {});
      if (wrapped[name]) {
        assert.deepEqual([...props].sort(), wrapped[name], `${name} changed its fields; the client sends only these`);
        continue;
      }
      const have = fields[names[name] ?? name];
      assert.ok(have, `schema ${name} has no client type`);
      const missing = props.filter((p) => !have.has(p));
      assert.deepEqual(missing, [], `client type for ${name} lacks fields`);
    }
    assert.ok(fields.AllowedTool.has('spec'));
  });
});

describe('health and description', { concurrency: true }, () => {
  it('healthz, readyz', async () => {
    assert.equal((await c.healthz()).status, 'ok');
    assert.equal((await c.readyz()).status, 'ready');
  });
  it('metrics', async () => {
    assert.match(await c.metrics(), /^# (HELP|TYPE) /m);
  });
  it('openapi', async () => {
    const doc = await c.openapi();
    assert.equal(doc.openapi, spec.openapi);
    assert.deepEqual(Object.keys(doc.paths).sort(), Object.keys(spec.paths).sort());
  });
  it('skills and activate', async () => {
    const list = await c.skills();
    assert.ok(list.some((s) => s.name === 'hello' && s.description.length > 0));
    assert.ok(list.some((s) => s.name === 'tsgo-probe'));
    const a = await c.activate('hello');
    assert.equal(a.base_dir, '/skills/hello');
    assert.ok(a.scripts.includes('scripts/echo.py'));
    assert.ok(a.allowed_tools.some((t) => t.name === 'Bash'));
  });
  it('reads SANDBOXRUN_URL and SANDBOXRUN_TOKEN when not given', async () => {
    const saved = [process.env.SANDBOXRUN_URL, process.env.SANDBOXRUN_TOKEN];
    process.env.SANDBOXRUN_URL = main.url;
    process.env.SANDBOXRUN_TOKEN = TOKEN;
    try {
      const envClient = new Client();
      assert.equal(envClient.isLocal, false);
      assert.equal(envClient.url, main.url);
      assert.ok((await envClient.skills()).length >= 3);
    } finally {
      [process.env.SANDBOXRUN_URL, process.env.SANDBOXRUN_TOKEN] = saved;
      if (saved[0] === undefined) delete process.env.SANDBOXRUN_URL;
      if (saved[1] === undefined) delete process.env.SANDBOXRUN_TOKEN;
    }
  });
  it('refuses a URL it cannot use, naming the fix', () => {
    for (const url of ['ftp://x', 'localhost:8080', 'unix:', 'http://127.0.0.1:1/v1']) {
      assert.throws(() => new Client({ url }), /give|needs|root/);
    }
  });
  it('an unreachable server is a TransportError', async () => {
    await rejects(new Client({ url: 'http://127.0.0.1:1' }).healthz(), TransportError);
  });
});

describe('runs', { concurrency: true }, () => {
  it('run: args on stdin, argv, env, output parsed', async () => {
    const r = await c.run('tsgo-probe', 'scripts/probe.py', { args: { n: 1 }, argv: ['--x', 'a b'], env: { PROBE_VAR: 'v' }, timeout: 20 });
    assert.equal(r.success, true);
    assert.equal(r.exit_code, 0);
    assert.deepEqual(r.output, { args: { n: 1 }, argv: ['--x', 'a b'], env: 'v' });
    assert.equal(r.stderr, 'to stderr\n');
    assert.equal(r.skill, 'tsgo-probe');
    assert.equal(r.limits.timeout_s, 20);
    assert.ok(r.id && r.image && r.duration_ms > 0);
  });
  it('run: a script that fails is a Result', async () => {
    const r = await c.python('tsgo-probe', 'import sys; sys.exit(3)');
    assert.equal(r.success, false);
    assert.equal(r.exit_code, 3);
  });
  it('run: a timeout is a Result with exit code 124', async () => {
    const r = await c.run('tsgo-probe', 'scripts/slow.py', { timeout: '1s' });
    assert.equal(r.timed_out, true);
    assert.equal(r.exit_code, 124);
  });
  it('exec', async () => {
    const r = await c.exec('hello', 'echo hi && python3 /skills/hello/scripts/echo.py', { args: { a: 1 } });
    assert.equal(r.success, true);
    assert.match(r.stdout, /^hi\n/);
    assert.match(r.stdout, /"a": 1/);
  });
  it('python with argv', async () => {
    const r = await c.python('hello', 'import sys; print(sys.argv[1:])', { argv: ['x', 'y'] });
    assert.equal(r.stdout, "['x', 'y']\n");
  });
  it('streamRun yields output as it comes, then the Result', async () => {
    const seen = [];
    let result;
    for await (const ev of c.streamRun('tsgo-probe', 'scripts/probe.py', { args: { s: true } })) {
      if ('exit_code' in ev) result = ev;
      else seen.push(ev);
    }
    assert.ok(seen.some((e) => e.type === 'stdout' && e.data.includes('"s": true')));
    assert.ok(seen.some((e) => e.type === 'stderr' && e.data === 'to stderr\n'));
    assert.equal(result.success, true);
  });
  it('streamExec and streamPython', async () => {
    const kinds = [];
    for await (const ev of c.streamExec('hello', 'echo streamed')) kinds.push(ev.type ?? 'result');
    assert.deepEqual(kinds, ['stdout', 'result']);
    const py = [];
    for await (const ev of c.streamPython('hello', 'print(1); print(2)')) py.push(ev);
    assert.equal(py.at(-1).stdout, '1\n2\n');
  });
  it('leaving a stream early cancels the run', async () => {
    const t0 = Date.now();
    for await (const ev of c.streamRun('tsgo-probe', 'scripts/slow.py', { timeout: 60 })) {
      assert.equal(ev.type, 'stdout');
      break;
    }
    assert.ok(Date.now() - t0 < 30000);
  });
  it('a unix socket server', async () => {
    const u = new Client({ url: busy.url, token: '' });
    assert.equal((await u.healthz()).status, 'ok');
    const r = await u.run('hello', 'scripts/echo.sh', { args: { via: 'unix' } });
    assert.equal(r.success, true);
    assert.match(r.stdout, /unix/);
  });
});

describe('explain', { concurrency: true }, () => {
  it('explains the run that follows', async () => {
    const e = await c.explain('hello', { script: 'scripts/echo.py', timeout: 7, memory_mib: 128 });
    assert.equal(e.action, 'script');
    assert.deepEqual(e.argv, ['python3', '/skills/hello/scripts/echo.py']);
    const r = await c.run('hello', 'scripts/echo.py', { timeout: 7, memory_mib: 128 });
    assert.equal(e.limits.timeout_s, r.limits.timeout_s);
    assert.equal(e.limits.memory_bytes, r.limits.memory_bytes);
    assert.equal(e.limits.network, r.limits.network);
    assert.equal(e.image, r.image);
    assert.equal((await c.explain('hello', { command: 'python3 scripts/echo.py' })).command, 'python3 /skills/hello/scripts/echo.py');
    assert.equal((await c.explain('hello', { code: 'print(1)' })).action, 'python');
  });
  it('a session is /workspace and its id, never a host folder', async () => {
    const s = await c.createSession();
    try {
      const e = await c.explain('hello', { code: 'print(1)', session: s.id });
      assert.equal(e.workspace, '/workspace');
      assert.equal(e.session, s.id);
    } finally {
      await s.delete();
    }
  });
  it('refused, unknown, malformed', async () => {
    await rejects(c.explain('hello', { command: 'echo ok; rm -rf /tmp/x' }), RefusedError, (e) => {
      assert.equal(e.status, 403);
      assert.match(e.part, /rm/);
      assert.match(e.suggest, /Bash\(rm/);
      assert.equal(e.explanation?.skill, 'hello');
    });
    await rejects(c.explain('no-such-skill', { code: 'print(1)' }), NotFoundError);
    await rejects(c.explain('hello', { command: 'echo', argv: ['x'] }), BadRequestError);
    await assert.rejects(c.explain('hello', {}), TypeError);
  });
});

describe('errors', { concurrency: true }, () => {
  it('400 names the bad field', async () => {
    await rejects(c.run('hello', 'scripts/echo.py', { timeout: 'soon' }), BadRequestError, (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /timeout/);
    });
  });
  it('401 on a missing or wrong token', async () => {
    await rejects(new Client({ url: main.url, token: 'wrong-token-0123456789' }).skills(), AuthError, (e) => assert.equal(e.status, 401));
  });
  it('403: a denied command says which part and what would allow it', async () => {
    await rejects(c.exec('hello', 'echo ok; rm -rf /tmp/x'), RefusedError, (e) => {
      assert.equal(e.status, 403);
      assert.match(e.part, /rm/);
      assert.ok(e.reason.length > 0);
      assert.match(e.suggest, /Bash\(rm/);
    });
  });
  it('a stream refused before it began throws the same typed error', async () => {
    const it = c.streamExec('hello', 'rm -rf /tmp/x');
    await rejects(it.next(), RefusedError, (e) => assert.equal(e.status, 403));
  });
  it('403 for a reserved variable', async () => {
    await rejects(c.run('hello', 'scripts/echo.py', { env: { LD_PRELOAD: '/x.so' } }), RefusedError);
  });
  it('404 for an unknown skill and an unknown session', async () => {
    await rejects(c.run('no-such-skill', 'scripts/x.py'), NotFoundError, (e) => assert.equal(e.status, 404));
    await rejects(c.activate('no-such-skill'), NotFoundError);
    await rejects(c.getSession('aaaaaaaaaaaaaaaaaaaaaaaaaa'), NotFoundError);
  });
  it('409, 413 and 400 on session files', async () => {
    await c.withSession(async (s) => {
      await s.upload('dir/a.txt', 'a');
      await rejects(s.download('dir'), ConflictError, (e) => assert.equal(e.status, 409));
      await rejects(s.upload('big.bin', new Uint8Array(128 << 10)), TooLargeError, (e) => {
        assert.equal(e.status, 413);
        assert.match(e.message, /quota/);
      });
      await rejects(s.upload('../escape', 'x'), BadRequestError);
    });
  });
  it('415 maps to UnsupportedMediaError', () => {
    // The client always labels a tar; the mapping is what is left to check.
    const e = errorForStatus(415, { error: 'not a tar' });
    assert.ok(e instanceof UnsupportedMediaError);
    assert.equal(e.status, 415);
  });
  it('408 maps to RequestTimeoutError', () => {
    const e = errorForStatus(408, { error: 'the body did not arrive in time' });
    assert.ok(e instanceof RequestTimeoutError);
    assert.equal(e.status, 408);
  });
  it('429 carries the retry delay', async () => {
    const u = new Client({ url: busy.url });
    const first = u.streamRun('tsgo-probe', 'scripts/slow.py', { timeout: 60 });
    assert.equal((await first.next()).value.type, 'stdout'); // holds the only slot
    try {
      await rejects(u.run('hello', 'scripts/echo.py'), BusyError, (e) => {
        assert.equal(e.status, 429);
        assert.equal(e.retryAfter, 1);
      });
    } finally {
      await first.return(undefined);
    }
  });
  it('500 when the sandbox fails mid-run, with what is known', async () => {
    const run = c.run(killSkill, 'scripts/slow.py', { timeout: 60 });
    let id = '';
    for (let i = 0; i < 100 && !id; i++) {
      await new Promise((r) => setTimeout(r, 200));
      id = execFileSync('docker', ['ps', '-q', '--filter', `label=io.sandboxrun.skill=${killSkill}`]).toString().trim().split('\n')[0];
    }
    assert.ok(id, 'the run container never showed up');
    await new Promise((r) => setTimeout(r, 500)); // let the script start
    execFileSync('docker', ['rm', '-f', id]);
    await rejects(run, ServerError, (e) => {
      assert.equal(e.status, 500);
      assert.ok(e.reason.length > 0);
      assert.equal(e.result.skill, killSkill);
    });
  });
  it('503 when the engine is unreachable', async () => {
    const d = new Client({ url: down.url });
    await rejects(d.readyz(), UnavailableError, (e) => {
      assert.equal(e.status, 503);
      assert.match(e.reason, /not ready/); // no token needed: the cause goes to the server's log
    });
    await rejects(d.run('hello', 'scripts/echo.py'), UnavailableError);
    await rejects(d.run('hello', 'scripts/echo.py'), ServerError);
  });
});

describe('sessions and files', () => {
  it('every session and file call', async () => {
    const s = await c.createSession('10m');
    try {
      assert.match(s.id, /^[a-z2-7]{26}$/);
      assert.ok(s.info.bytes_limit > 0);
      assert.ok((await c.listSessions()).some((x) => x.id === s.id));
      assert.equal((await c.getSession(s.id)).id, s.id);
      const stored = await s.upload('in.txt', 'hello from the host');
      assert.equal(stored.size, 19);
      assert.match(stored.sha256, /^[0-9a-f]{64}$/);
      assert.equal(new TextDecoder().decode(await s.download('in.txt')), 'hello from the host');
      const r = await s.run('tsgo-probe', 'scripts/write.py');
      assert.equal(r.success, true, r.stderr);
      assert.equal(r.stdout, 'hello from the host\n');
      assert.deepEqual(r.files.map((f) => [f.path, f.change]), [['made.txt', 'created']]);
      const put = await s.uploadTar(tar({ 'd/one.txt': '1', 'd/two.txt': '22' }));
      assert.deepEqual(put.map((f) => f.path).sort(), ['d/one.txt', 'd/two.txt']);
      assert.deepEqual((await s.files('d')).map((f) => f.path).sort(), ['d/one.txt', 'd/two.txt']);
      const all = (await s.files()).map((f) => f.path);
      assert.ok(all.includes('made.txt') && all.includes('in.txt'));
      const t = new TextDecoder().decode(await s.downloadTar());
      assert.match(t, /made\.txt/);
      assert.match(t, /d\/two\.txt/);
      await s.remove('d');
      assert.ok(!(await s.files()).some((f) => f.path.startsWith('d')));
      assert.ok((await s.refresh()).bytes_used > 0);
      const ex = await s.exec('tsgo-probe', 'python3 -c "print(open(\'made.txt\').read())"');
      assert.equal(ex.stdout, 'made by the run\n');
      const py = await s.python('tsgo-probe', 'import os; print(sorted(os.listdir(".")))');
      assert.match(py.stdout, /in\.txt/);
    } finally {
      await s.delete();
    }
    await rejects(c.getSession(s.id), NotFoundError);
  });
  it('snapshots, restore and fork', async () => {
    await c.withSession(async (s) => {
      await s.upload('notes.txt', 'v1');
      const snap = await c.createSnapshot(s.id, 'before');
      assert.equal(snap.label, 'before');
      assert.equal(snap.session, s.id);
      await s.upload('notes.txt', 'v2');
      await s.upload('added.txt', 'x');
      const f = await c.fork(s.id, snap.id);
      try {
        assert.equal(new TextDecoder().decode(await f.download('notes.txt')), 'v1');
      } finally {
        await f.delete();
      }
      await c.restore(s.id, snap.id);
      assert.equal(new TextDecoder().decode(await s.download('notes.txt')), 'v1');
      await rejects(s.download('added.txt'), NotFoundError);
      assert.deepEqual((await c.listSnapshots(s.id)).map((x) => x.id), [snap.id]);
      await c.deleteSnapshot(s.id, snap.id);
      await rejects(c.restore(s.id, snap.id), NotFoundError);
    });
  });
  it('withSession deletes the session even when the callback throws', async () => {
    let id = '';
    await assert.rejects(
      c.withSession(async (s) => {
        id = s.id;
        throw new Error('boom');
      }),
      /boom/,
    );
    await rejects(c.getSession(id), NotFoundError);
  });
});
