// Usage events of a stream reach onUsage, in order and before the Result,
// and the interval asked is sent: against a node:http server on loopback
// that answers with a stream, then against a real serve on the engine.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client, LocalModeError } from '../dist/index.js';
import { requireEngine, startServer } from './harness.mjs';

let body;
const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => { raw += c; });
  req.on('end', () => {
    body = JSON.parse(raw);
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    res.end([
      { type: 'stdout', data: 'a\n' },
      { type: 'usage', usage: { elapsed_ms: 1000, cpu_percent: 97.5, memory_bytes: 1048576, pids: 3 } },
      { type: 'usage', usage: { elapsed_ms: 2000, cpu_percent: 99, memory_bytes: 2097152, pids: 3 } },
      { type: 'result', result: { id: 'r', success: true, peak_cpu_percent: 99, peak_memory_bytes: 2097152, peak_pids: 3 } },
    ].map((e) => JSON.stringify(e)).join('\n') + '\n');
  });
});
let url;

describe('live usage', () => {
  before(async () => {
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());

  it('streams hand usage samples to onUsage before the Result', async () => {
    const c = new Client({ url });
    const order = [];
    const samples = [];
    for await (const item of c.streamExec('hello', 'x', { usage_every_ms: 1000, onUsage: (u) => { samples.push(u); order.push('usage'); } })) {
      order.push('type' in item && (item.type === 'stdout' || item.type === 'stderr') ? item.type : 'result');
      if (!('type' in item)) {
        assert.equal(item.peak_memory_bytes, 2097152);
        assert.equal(item.peak_pids, 3);
      }
    }
    assert.deepEqual(order, ['stdout', 'usage', 'usage', 'result']);
    assert.deepEqual(samples.map((u) => u.memory_bytes), [1048576, 2097152]);
    assert.equal(body.usage_every_ms, 1000);
    assert.equal(body.onUsage, undefined);
  });

  it('local mode refuses usage_every_ms', async () => {
    const c = new Client({ url: '' , bin: '/nonexistent' });
    await assert.rejects(c.exec('hello', 'x', { usage_every_ms: 1000 }), LocalModeError);
  });
});

const BURN = `import time
held = bytearray(64 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
end = time.time() + 3
while time.time() < end:
    pass
print("done")
`;

describe('live usage from a real serve', () => {
  let srv;
  before(async () => {
    requireEngine();
    srv = await startServer({ ready: true, args: ['--warm-pool', '0'] });
  });
  after(async () => { await srv?.stop(); });

  it('a busy run shows usage samples and keeps the peak', async () => {
    const c = new Client({ url: srv.url });
    const samples = [];
    let res;
    for await (const item of c.streamPython('hello', BURN, { usage_every_ms: 1000, onUsage: (u) => samples.push(u) })) {
      if (!('type' in item)) res = item;
    }
    assert.ok(res?.success, res?.stderr);
    assert.ok(samples.length >= 1, 'a 3 s run sampled every second shows usage');
    assert.ok(samples.every((u) => u.memory_bytes > 0), JSON.stringify(samples));
    assert.equal(res.peak_memory_bytes, Math.max(...samples.map((u) => u.memory_bytes)));
    assert.ok(res.peak_memory_bytes >= 48 << 20, JSON.stringify(samples));
  });
});
