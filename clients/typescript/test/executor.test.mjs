// The drop-in ScriptExecutor's contract, case by case, through a real
// sandboxrun: a server on loopback and the local CLI, with the real engine.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  Client,
  ScriptExecutor,
  createScriptExecutor,
  getDefaultScriptExecutor,
  resetDefaultScriptExecutor,
} from '../dist/index.js';
import * as dropIn from '../dist/executor.js';
import { bin, TOKEN, requireEngine, tempDir, makeSkill, startServer } from './harness.mjs';

requireEngine();

const SCRIPTS = {
  'analyze.py': `import json, os, sys
inputs = json.loads(sys.stdin.read() or "null")
env = {k: os.environ.get(k) for k in ["SCRIPT_TOOL_ID", "SCRIPT_PROMPT_ID", "SCRIPT_TOOL_DIR", "BASE", "TOOLENV", "REQ", "TSGO_HOST_SECRET", "HOME", "NODE_OPTIONS"]}
print(json.dumps({"inputs": inputs, "env": env, "cwd": os.getcwd()}))
`,
  'plain.py': 'print("plain text output")\n',
  'empty.py': 'pass\n',
  'fail.py': 'import sys\nsys.stderr.write("bad things happened\\n")\nsys.exit(3)\n',
  'silent.py': 'import sys\nsys.exit(5)\n',
  'sleep.py': 'import time\ntime.sleep(60)\n',
  'killself.py': 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n',
  'escape.py': `import json, os, socket
out = {}
try:
    open(os.path.join(os.environ["SCRIPT_TOOL_DIR"], "scripts", "planted.py"), "w").write("x")
    out["write"] = "written"
except OSError as e:
    out["write"] = type(e).__name__
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    out["net"] = "connected"
except OSError as e:
    out["net"] = type(e).__name__
print(json.dumps(out))
`,
  'big.py': 'import sys\nsys.stdout.write("x" * (10 * 1024 * 1024 + 4096))\n',
  'echo.js': `let s = ''; process.stdin.on('data', (d) => (s += d)); process.stdin.on('end', () => console.log(JSON.stringify({ runtime: 'node', inputs: JSON.parse(s) })));\n`,
  'echo.sh': '#!/bin/bash\ncat > /dev/null\necho \'{"runtime": "shell"}\'\n',
};

const root = tempDir('tools');
const toolDir = makeSkill(root, 'tsgo-tools', SCRIPTS);
let server;

before(async () => {
  server = await startServer({ skills: root, ready: true, tokens: true });
});
after(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

const schema = {
  type: 'object',
  properties: {
    file: { type: 'string' },
    count: { type: 'integer' },
    ratio: { type: 'number' },
    columns: { type: 'array' },
    options: { type: 'object' },
    flag: { type: ['boolean', 'string'] },
  },
  required: ['file'],
};

function tool(script, extra = {}) {
  return {
    id: `tool-${script}`,
    promptId: 'prompt-1',
    name: script,
    toolDir,
    absoluteScriptPath: join(toolDir, 'scripts', script),
    inputSchema: schema,
    ...extra,
  };
}

const req = (inputs = { file: 'data.csv' }, extra = {}) => ({ toolId: 't', promptId: 'prompt-1', inputs, ...extra });

function assertShape(r) {
  const keys = Object.keys(r).sort();
  const base = ['durationMs', 'exitCode', 'output', 'stderr', 'stdout', 'success'];
  assert.deepEqual(keys, r.success ? base : [...base, 'error'].sort());
  assert.equal(typeof r.durationMs, 'number');
  assert.ok(r.durationMs >= 0);
}

function contract(mode) {
  const client = () => (mode === 'server' ? new Client({ url: server.url, token: TOKEN }) : new Client({ url: '', bin }));
  let ex;
  before(() => {
    ex = new ScriptExecutor({ client: client(), baseEnv: { BASE: 'base', TOOLENV: 'from-base' } });
  });

  it('success: inputs on stdin, JSON output parsed, the SCRIPT_* variables', async () => {
    const r = await ex.execute(req({ file: 'data.csv', columns: '["a", "b"]', count: 2 }), tool('analyze.py', { env: { TOOLENV: 'from-tool' } }));
    assertShape(r);
    assert.equal(r.success, true, r.error);
    assert.equal(r.exitCode, 0);
    assert.deepEqual(r.output.inputs, { file: 'data.csv', columns: ['a', 'b'], count: 2 });
    assert.equal(r.output.env.SCRIPT_TOOL_ID, 'tool-analyze.py');
    assert.equal(r.output.env.SCRIPT_PROMPT_ID, 'prompt-1');
    assert.equal(r.output.env.SCRIPT_TOOL_DIR, '/skills/tsgo-tools');
    assert.equal(r.output.env.BASE, 'base');
    assert.equal(r.output.env.TOOLENV, 'from-tool');
    assert.ok(r.durationMs > 0);
    // Locally the script starts in its folder, as the seed's did; a server takes no working directory.
    assert.equal(r.output.cwd, mode === 'local' ? '/skills/tsgo-tools' : '/workspace');
    assert.equal(r.stdout.trim(), JSON.stringify(r.output).replace(/,/g, ', ').replace(/:/g, ': '));
  });
  it('request.env wins over tool.env and baseEnv; the host environment is not inherited', async () => {
    process.env.TSGO_HOST_SECRET = 'must-not-leak';
    try {
      const r = await ex.execute(req(undefined, { env: { REQ: 'r', TOOLENV: 'from-request' } }), tool('analyze.py', { env: { TOOLENV: 'from-tool' } }));
      assert.equal(r.output.env.REQ, 'r');
      assert.equal(r.output.env.TOOLENV, 'from-request');
      assert.equal(r.output.env.TSGO_HOST_SECRET, null);
      assert.notEqual(r.output.env.HOME, process.env.HOME);
    } finally {
      delete process.env.TSGO_HOST_SECRET;
    }
  });
  it('a code-loading variable is refused as an error result, never thrown', async () => {
    const r = await ex.execute(req(undefined, { env: { NODE_OPTIONS: '--require /x.js' } }), tool('analyze.py'));
    assertShape(r);
    assert.equal(r.success, false);
    assert.equal(r.exitCode, -1);
    assert.match(r.error, /NODE_OPTIONS/);
  });
  it('non-JSON output falls back to {output: text}', async () => {
    const r = await ex.execute(req(), tool('plain.py'));
    assert.deepEqual(r.output, { output: 'plain text output' });
  });
  it('empty output is null', async () => {
    const r = await ex.execute(req(), tool('empty.py'));
    assert.equal(r.success, true);
    assert.equal(r.output, null);
  });
  it('a failing script: exit code, and stderr as the error', async () => {
    const r = await ex.execute(req(), tool('fail.py'));
    assertShape(r);
    assert.equal(r.success, false);
    assert.equal(r.exitCode, 3);
    assert.equal(r.error, 'bad things happened\n');
    assert.equal(r.stderr, 'bad things happened\n');
  });
  it('a failing script with no stderr: "Process exited with code N"', async () => {
    const r = await ex.execute(req(), tool('silent.py'));
    assert.equal(r.exitCode, 5);
    assert.equal(r.error, 'Process exited with code 5');
  });
  it('timeout: exit code -1, output null, "Script timed out after N ms"', async () => {
    const r = await ex.execute(req(undefined, { timeout: 1000 }), tool('sleep.py'));
    assertShape(r);
    assert.equal(r.success, false);
    assert.equal(r.exitCode, -1);
    assert.equal(r.output, null);
    assert.equal(r.error, 'Script timed out after 1000ms');
  });
  it('the timeout is held to maxTimeout, and tool.timeout applies without a request timeout', async () => {
    const capped = new ScriptExecutor({ client: client(), maxTimeout: 1000 });
    const r = await capped.execute(req(undefined, { timeout: 60000 }), tool('sleep.py'));
    assert.equal(r.error, 'Script timed out after 1000ms');
    const byTool = await ex.execute(req(), tool('sleep.py', { timeout: 1500 }));
    assert.equal(byTool.error, 'Script timed out after 1500ms');
  });
  it('a script killed by a signal fails with a negative exit code', async () => {
    const r = await ex.execute(req(), tool('killself.py'));
    assert.equal(r.success, false);
    assert.equal(r.exitCode, -9);
    assert.ok(r.error);
  });
  it('runtime detection: .js runs under node, .sh under bash', async () => {
    const js = await ex.execute(req(), tool('echo.js'));
    assert.deepEqual(js.output, { runtime: 'node', inputs: { file: 'data.csv' } });
    const sh = await ex.execute(req(), tool('echo.sh'));
    assert.deepEqual(sh.output, { runtime: 'shell' });
  });
  it('the sandbox: the tool folder is read-only and there is no network', async () => {
    const r = await ex.execute(req(), tool('escape.py'));
    assert.equal(r.success, true, r.error);
    assert.notEqual(r.output.write, 'written');
    assert.notEqual(r.output.net, 'connected');
  });
  it('runs at once do not mix', async () => {
    const rs = await Promise.all([1, 2, 3, 4].map((n) => ex.execute(req({ file: `f${n}` }), tool('analyze.py'))));
    assert.deepEqual(rs.map((r) => r.output.inputs.file), ['f1', 'f2', 'f3', 'f4']);
  });
}

describe('contract through a server', { concurrency: true }, () => contract('server'));
describe('contract through the local CLI', { concurrency: true }, () => contract('local'));

describe('checks before anything runs', { concurrency: true }, () => {
  const ex = new ScriptExecutor({ client: new Client({ url: '', bin }) });
  it('a disabled tool', async () => {
    const r = await ex.execute(req(), tool('analyze.py', { enabled: false }));
    assertShape(r);
    assert.deepEqual([r.success, r.exitCode, r.error, r.output, r.stdout], [false, -1, 'Tool is disabled', null, '']);
  });
  it('a missing script, and one outside the tool folder', async () => {
    const r = await ex.execute(req(), tool('nope.py'));
    assert.equal(r.error, `Script not found: ${join(toolDir, 'scripts', 'nope.py')}`);
    const out = await ex.execute(req(), tool('x', { absoluteScriptPath: '/etc/passwd' }));
    assert.equal(out.error, 'Script not found: /etc/passwd');
  });
  it('input validation: required fields and types, as the seed reports them', async () => {
    const r = await ex.execute(req({ count: 'three' }), tool('analyze.py'));
    assert.equal(r.exitCode, -1);
    assert.equal(r.error, "Input validation failed: Missing required field: file; Field 'count': expected integer, got string");
  });
  it('an unknown runtime, and a runtime that contradicts the extension', async () => {
    const r = await ex.execute(req(), tool('analyze.py', { runtime: 'ruby' }));
    assert.equal(r.error, "No interpreter found for runtime 'ruby'");
    const m = await ex.execute(req(), tool('analyze.py', { runtime: 'node' }));
    assert.match(m.error, /Runtime 'node' does not match the 'python'/);
  });
  it('validateInputs: normalisation, null, integers as numbers, no schema', () => {
    const v = ex.validateInputs({ file: 'a', columns: '[1,2]', options: '{"k":1}', ratio: 2, flag: null }, schema);
    assert.equal(v.valid, true, v.errors.join());
    assert.deepEqual(v.normalizedInputs, { file: 'a', columns: [1, 2], options: { k: 1 }, ratio: 2, flag: null });
    const empty = ex.validateInputs({ file: 'a', columns: '  ' }, schema);
    assert.deepEqual(empty.normalizedInputs, { file: 'a' });
    const bad = ex.validateInputs({ file: 'a', columns: '[not json' }, schema);
    assert.deepEqual(bad.errors, ["Field 'columns': expected array, got string"]);
    assert.equal(bad.normalizedInputs, undefined);
    assert.deepEqual(ex.validateInputs({ anything: 1 }, { type: 'object' }), { valid: true, errors: [], normalizedInputs: { anything: 1 } });
  });
  it('an unreachable server is an error result, not an exception', async () => {
    const down = new ScriptExecutor({ client: new Client({ url: 'http://127.0.0.1:1' }) });
    const r = await down.execute(req(), tool('analyze.py'));
    assertShape(r);
    assert.equal(r.success, false);
    assert.match(r.error, /127\.0\.0\.1:1/);
  });
});

describe('output over the cap', () => {
  it('is cut, and stderr says so', async () => {
    const ex = new ScriptExecutor({ client: new Client({ url: server.url, token: TOKEN }) });
    const r = await ex.execute(req(), tool('big.py'));
    assert.equal(r.success, true);
    assert.equal(r.stdout.length, 10 << 20);
    assert.match(r.stderr, /output truncated at 10485760 bytes/);
  });
});

describe('the seed module surface', () => {
  it('exports the seed names from sandboxrun/script-executor', () => {
    for (const name of ['ScriptExecutor', 'createScriptExecutor', 'getDefaultScriptExecutor', 'resetDefaultScriptExecutor']) {
      assert.equal(typeof dropIn[name], 'function', name);
    }
    assert.ok(createScriptExecutor({ defaultTimeout: 5000 }) instanceof ScriptExecutor);
  });
  it('the default executor reads SANDBOXRUN_URL and SANDBOXRUN_TOKEN', async () => {
    const saved = [process.env.SANDBOXRUN_URL, process.env.SANDBOXRUN_TOKEN];
    process.env.SANDBOXRUN_URL = server.url;
    process.env.SANDBOXRUN_TOKEN = TOKEN;
    try {
      resetDefaultScriptExecutor();
      const d = getDefaultScriptExecutor();
      assert.equal(getDefaultScriptExecutor(), d);
      const r = await d.execute(req(), tool('plain.py'));
      assert.deepEqual(r.output, { output: 'plain text output' });
      resetDefaultScriptExecutor();
      assert.notEqual(getDefaultScriptExecutor(), d);
    } finally {
      for (const [k, v] of [['SANDBOXRUN_URL', saved[0]], ['SANDBOXRUN_TOKEN', saved[1]]]) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetDefaultScriptExecutor();
    }
  });
});
