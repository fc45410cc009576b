// Client.usage and usageAll against a real `sandboxrun serve` with a runs quota.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, BusyError, RefusedError } from '../dist/index.js';
import { TOKEN, requireEngine, tempDir, startServer } from './harness.mjs';

requireEngine();

let srv;
const dir = tempDir('usage');
const policy = join(dir, 'policy.yaml');

before(async () => {
  writeFileSync(policy, 'tenants:\n  default:\n    quotas:\n      - {window: 24h, runs: 1}\n');
  srv = await startServer({ ready: true, tokens: true, args: ['--policy', policy, '--warm-pool', '0'] });
});

after(async () => {
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('usage', () => {
  it('adds up the Results, and the quota refuses the next run with its name', async () => {
    const c = new Client({ url: srv.url, token: TOKEN });
    const res = await c.python('hello', 'sum(range(100000))');
    await assert.rejects(c.python('hello', 'print(1)'), (err) => {
      assert.ok(err instanceof BusyError, String(err));
      assert.match(err.message, /quota runs per 24h/);
      assert.ok(err.retryAfter >= 1);
      return true;
    });
    const u = await c.usage();
    assert.match(u.label, /^token-[0-9a-f]{8}$/);
    assert.equal(u.total.runs, 1);
    assert.equal(u.total.cpu_time_ms, res.cpu_time_ms);
    const day = u.windows[u.windows.length - 1];
    assert.equal(day.window, '24h0m0s');
    assert.equal(day.limits?.runs, 1);
    await assert.rejects(c.usageAll(), RefusedError);
  });
});
