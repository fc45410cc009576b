// Shared by the tests: a real `sandboxrun serve` on loopback (or a unix
// socket) with the real engine, and throwaway skills made for the tests.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, chmodSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '..', '..', '..');
export const bin = process.env.SANDBOXRUN_BIN || join(repo, 'bin', 'sandboxrun');
export const TOKEN = 'tsgo-test-token-0123456789abcdef';

/** Fails loudly, never skips, when the engine or the CLI is missing. */
export function requireEngine() {
  if (!existsSync(bin)) {
    throw new Error(`${bin} does not exist: run make build (or set SANDBOXRUN_BIN)`);
  }
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe', timeout: 20000 });
  } catch (err) {
    throw new Error(`the Docker engine is unreachable; these tests run against it: ${err.message}`);
  }
}

export function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), `sandboxrun-ts-${prefix}-`));
}

/** Writes a skill folder: SKILL.md and the given scripts; returns its path. */
export function makeSkill(root, name, scripts, frontmatter = '') {
  const dir = join(root, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: A skill the TypeScript client's tests made. Use it in tests only.\n${frontmatter}---\n\n# ${name}\n`);
  for (const [file, text] of Object.entries(scripts)) {
    writeFileSync(join(dir, 'scripts', file), text);
    chmodSync(join(dir, 'scripts', file), 0o755);
  }
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'scripts'), 0o755);
  return dir;
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

/**
 * Starts `sandboxrun serve`. opts: skills (roots, ':'-separated), tokens
 * (bool), sessions (bool), unix (bool), args (extra flags), env (extra
 * environment), ready (wait for /readyz instead of /healthz: the engine
 * answers and the runner image is there; build it with make images).
 */
export async function startServer(opts = {}) {
  const dir = tempDir('serve');
  const args = ['serve', '--skills', opts.skills ?? join(repo, 'skills')];
  let url;
  if (opts.unix) {
    const sock = join(dir, 'sandboxrun.sock');
    args.push('--listen', `unix:${sock}`);
    url = `unix:${sock}`;
  } else {
    const port = await freePort();
    args.push('--listen', `127.0.0.1:${port}`);
    url = `http://127.0.0.1:${port}`;
  }
  if (opts.tokens) {
    writeFileSync(join(dir, 'tokens'), `${TOKEN}\n`);
    args.push('--tokens', join(dir, 'tokens'));
  }
  if (opts.sessions) {
    args.push('--sessions', join(dir, 'sessions'));
  }
  args.push(...(opts.args ?? []));
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...(opts.env ?? {}) } });
  let log = '';
  child.stderr.on('data', (c) => (log += c));
  const exited = new Promise((res) => child.on('exit', res));
  // The main servers wait for /readyz: a missing runner image then fails
  // here, with the server's reason, rather than in every test.
  const probe = opts.unix ? null : `${url}/${opts.ready ? 'readyz' : 'healthz'}`;
  let last = '';
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`sandboxrun serve exited: ${log}`);
    if (i > 300) throw new Error(`sandboxrun serve did not answer ${probe ?? url} in 30 s: ${last} ${log}`);
    try {
      if (probe) {
        const r = await fetch(probe);
        if (r.ok) break;
        last = await r.text();
      } else if (existsSync(url.slice(5))) {
        break;
      }
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    dir,
    log: () => log,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A minimal ustar archive of regular files, for the bulk upload. */
export function tar(files) {
  const blocks = [];
  const enc = new TextEncoder();
  for (const [name, text] of Object.entries(files)) {
    const data = enc.encode(text);
    const h = new Uint8Array(512);
    const put = (s, at, len) => h.set(enc.encode(s).slice(0, len), at);
    put(name, 0, 100);
    put('0000644\0', 100, 8);
    put('0001750\0', 108, 8);
    put('0001750\0', 116, 8);
    put(data.length.toString(8).padStart(11, '0') + '\0', 124, 12);
    put('00000000000\0', 136, 12);
    put('        ', 148, 8);
    put('0', 156, 1);
    put('ustar\0', 257, 6);
    put('00', 263, 2);
    let sum = 0;
    for (const b of h) sum += b;
    put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
    blocks.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
