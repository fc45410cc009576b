// Local mode: the client running the sandboxrun CLI on this host, with the
// same return types, against the real engine.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client, LocalModeError, NotFoundError, RefusedError, SandboxrunError, UnavailableError } from '../dist/index.js';
import { repo, bin, requireEngine, tempDir, makeSkill } from './harness.mjs';

requireEngine();

const PROBE = `import json, os, sys
args = json.loads(sys.stdin.read() or "{}")
print(json.dumps({"args": args, "argv": sys.argv[1:], "env": os.environ.get("PROBE_VAR", "")}))
`;
const skillsRoot = tempDir('local');
makeSkill(skillsRoot, 'tsgo-probe', { 'probe.py': PROBE });
const skills = `${join(repo, 'skills')}:${skillsRoot}`;
after(() => rmSync(skillsRoot, { recursive: true, force: true }));

async function rejects(promise, Cls, check) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
    check?.(err);
    return;
  }
  assert.fail(`expected ${Cls.name}, the call succeeded`);
}

describe('local mode (the CLI)', { concurrency: true }, () => {
  const saved = process.env.SANDBOXRUN_URL;
  delete process.env.SANDBOXRUN_URL;
  const local = new Client({ bin, skills });
  if (saved !== undefined) process.env.SANDBOXRUN_URL = saved;

  it('is local without a URL', () => {
    assert.equal(local.isLocal, true);
    assert.equal(local.url, '');
  });
  it('skills, activate, checkCommand', async () => {
    assert.ok((await local.skills()).some((s) => s.name === 'hello'));
    assert.equal((await local.activate('hello')).base_dir, '/skills/hello');
    const yes = await local.checkCommand('hello', 'echo hi');
    assert.equal(yes.allowed, true);
    const no = await local.checkCommand('hello', 'rm -rf /');
    assert.equal(no.allowed, false);
    assert.match(no.suggest, /rm/);
  });
  it('explain judges a command with the CLI', async () => {
    const e = await local.explain('hello', { command: 'python3 scripts/echo.py', timeout: 5 });
    assert.equal(e.action, 'command');
    assert.equal(e.command, 'python3 /skills/hello/scripts/echo.py');
    await rejects(local.explain('hello', { command: 'echo hi | curl x' }), RefusedError, (e) => {
      assert.equal(e.part, 'curl x');
      assert.equal(e.suggest, 'Bash(curl:*)');
      assert.equal(e.explanation?.skill, 'hello');
    });
    await rejects(local.explain('hello', { command: 'echo hi', env: { HOME: '/' } }), RefusedError);
    await rejects(local.explain('hello', { script: 'scripts/echo.py' }), LocalModeError);
  });
  it('run, exec, python with the same Result', async () => {
    const r = await local.run('tsgo-probe', 'scripts/probe.py', { args: { n: 2 }, argv: ['a'], env: { PROBE_VAR: 'local' } });
    assert.deepEqual(r.output, { args: { n: 2 }, argv: ['a'], env: 'local' });
    assert.ok(r.id && r.limits.timeout_s > 0);
    const e = await local.exec('hello', 'echo local');
    assert.equal(e.stdout, 'local\n');
    const p = await local.python('hello', 'import sys; print(sys.argv[1:]); sys.exit(4)', { argv: ['z'] });
    assert.equal(p.exit_code, 4);
    assert.equal(p.stdout, "['z']\n");
    const t = await local.python('hello', 'import time; time.sleep(30)', { timeout: 1 });
    assert.equal(t.timed_out, true);
    assert.equal(t.exit_code, 124);
  });
  it('streams end in the Result', async () => {
    const evs = [];
    for await (const ev of local.streamRun('hello', 'scripts/echo.py', { args: { k: 1 } })) evs.push(ev);
    assert.equal(evs[0].type, 'stdout');
    assert.equal(evs.at(-1).success, true);
  });
  it('typed errors from the exit status', async () => {
    await rejects(local.exec('hello', 'rm -rf /tmp/x'), RefusedError);
    await rejects(local.run('no-such-skill', 'scripts/x.py'), NotFoundError);
    await rejects(local.run('hello', 'scripts/echo.py', { session: 'x' }), LocalModeError);
    await rejects(local.createSession(), LocalModeError);
    await rejects(local.healthz(), LocalModeError);
    await rejects(new Client({ url: '', bin: '/nonexistent/sandboxrun' }).run('hello', 'scripts/echo.py'), SandboxrunError, (e) => {
      assert.match(e.message, /SANDBOXRUN_BIN/);
    });
  });
});

// Alone: it changes the environment every CLI call inherits.
describe('local mode without an engine', () => {
  const local = new Client({ url: '', bin, skills });
  process.env.SANDBOXRUN_URL && assert.fail('SANDBOXRUN_URL must be unset for the local tests');
  it('the engine unreachable is UnavailableError', async () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
    try {
      await rejects(local.run('hello', 'scripts/echo.py'), UnavailableError);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });
});
