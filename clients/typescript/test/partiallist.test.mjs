// A list of sessions that lacks a replica's is never taken for whole: the
// client throws PartialListError with the sessions that came. A node:http
// server gives the answers a server of several replicas gives.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client, PartialListError } from '../dist/index.js';

let answer = {};
const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(answer));
});
let client;

before(async () => {
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  client = new Client({ url: `http://127.0.0.1:${server.address().port}`, token: 't' });
});
after(() => server.close());

describe('listSessions across replicas', () => {
  it('returns a whole list', async () => {
    answer = { sessions: [{ id: 'r-0-a' }, { id: 'r-1-b' }], partial: false, unreachable: [] };
    assert.deepEqual((await client.listSessions()).map((s) => s.id), ['r-0-a', 'r-1-b']);
  });
  it('throws with what came when a replica is away', async () => {
    answer = { sessions: [{ id: 'r-0-a' }], partial: true, unreachable: ['r-1'] };
    await assert.rejects(client.listSessions(), (err) => {
      assert.ok(err instanceof PartialListError);
      assert.deepEqual(err.items.map((s) => s.id), ['r-0-a']);
      assert.deepEqual(err.unreachable, ['r-1']);
      assert.match(err.message, /r-1/);
      return true;
    });
  });
  it('throws when the server does not know its peers', async () => {
    answer = { sessions: [], partial: true, unreachable: [] };
    await assert.rejects(client.listSessions(), /--replicas/);
  });
});
