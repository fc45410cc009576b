// Ids, names and file paths a router would resolve to another resource are
// refused before sending, and a redirect of anything but a read is never
// followed. No sandboxrun server is needed: a node:http server records what
// reaches it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, BadParamError, BadRequestError, RedirectError } from '../dist/index.js';

// Every request under /moved is answered 307 to the same path without it
// (as Go's ServeMux answers a path it cleans); any other is recorded.
let seen = [];
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url.startsWith('/moved/')) {
      res.writeHead(307, { Location: req.url.slice('/moved'.length), 'Content-Length': '0' });
      res.end();
      return;
    }
    seen.push(`${req.method} ${req.url}`);
    if (req.method === 'DELETE') {
      res.writeHead(204);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ id: 'S', path: 'x', size: 1, sha256: '' }));
  });
});
let url;
let sockDir;

before(async () => {
  sockDir = mkdtempSync(join(tmpdir(), 'sandboxrun-params-'));
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => {
  server.close();
  rmSync(sockDir, { recursive: true, force: true });
});

describe('ids and names', () => {
  it('refuses what a router would clean, before sending', async () => {
    seen = [];
    const c = new Client({ url, token: 't' });
    const calls = {
      'snapshot ..': () => c.deleteSnapshot('S', '..'),
      'snapshot .': () => c.deleteSnapshot('S', '.'),
      'snapshot empty': () => c.deleteSnapshot('S', ''),
      'snapshot slash': () => c.deleteSnapshot('S', 'x/..'),
      'session ..': () => c.deleteSession('..'),
      'session backslash': () => c.getSession('a\\b'),
      'version ..': () => c.deleteSkillVersion('greeter', '..'),
      'skill ..': () => c.deleteSkill('..'),
      'skill slash': () => c.activate('a/b'),
      'run ..': () => c.run('..', 'scripts/x.py'),
      'file ..': () => c.putFile('S', 'a/../../x', 'x'),
      'file trailing': () => c.putFile('S', 'a/', 'x'),
      'file absolute': () => c.deleteFile('S', '/etc/passwd'),
      'file .': () => c.getFile('S', './a'),
    };
    for (const [name, call] of Object.entries(calls)) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof BadParamError, `${name}: ${e}`);
        assert.ok(e instanceof BadRequestError, name);
        assert.equal(e.status, undefined, `${name}: no server answered`);
        return true;
      });
    }
    assert.deepEqual(seen, [], 'nothing was sent');

    await c.deleteSnapshot('S', '1.2'); // a dot inside a name is fine
    await c.putFile('S', 'out/.hidden/a..b', 'x');
    assert.deepEqual(seen, ['DELETE /v1/sessions/S/snapshots/1.2', 'PUT /v1/sessions/S/files/out/.hidden/a..b']);
  });
});

describe('redirects', () => {
  it('never follows one but for a read, over fetch and over a unix socket', async () => {
    const sock = join(sockDir, 's.sock');
    const unix = createServer(server.listeners('request')[0]);
    await new Promise((ok) => unix.listen(sock, ok));
    try {
      for (const base of [url, `unix:${sock}`]) {
        seen = [];
        const c = new Client({ url: base, token: 't' });
        // Every call of this client goes to /moved/...: a subclass
        // cannot reach the private transport, so the path is moved there.
        const moved = (path) => `/moved${path}`;
        const t = c.server('getSession');
        const send = t.send.bind(t);
        t.send = (req) => send({ ...req, path: moved(req.path) });
        for (const [name, call] of Object.entries({
          delete: () => c.deleteSession('S'),
          put: () => c.putFile('S', 'x', 'x'),
          post: () => c.createSnapshot('S'),
        })) {
          await assert.rejects(call(), (e) => {
            assert.ok(e instanceof RedirectError, `${base} ${name}: ${e}`);
            assert.equal(e.status, 307);
            assert.match(e.location, /^\/v1\/sessions\/S/);
            assert.match(e.message, /not followed/);
            return true;
          });
        }
        assert.deepEqual(seen, [], `${base}: no redirect of a change was followed`);
        if (!base.startsWith('unix:')) {
          const s = await c.getSession('S');
          assert.equal(s.id, 'S', 'a GET follows');
          assert.deepEqual(seen, ['GET /v1/sessions/S']);
        }
      }
    } finally {
      unix.close();
    }
  });
});
