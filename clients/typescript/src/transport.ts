// One request to a server, over fetch (http, https) or node:http (a unix
// socket, which fetch cannot reach).
import { request as httpRequest } from 'node:http';
import { RedirectError, TransportError, errorForStatus } from './errors.js';
import type { ErrorBody } from './types.js';

export interface Reply {
  status: number;
  header(name: string): string | undefined;
  body: AsyncIterable<Uint8Array>;
}

export interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  signal?: AbortSignal;
}

/** Where a Transport sends: an http(s) base URL or a unix socket. */
export class Transport {
  readonly url: string;
  private readonly base?: string;
  private readonly socket?: string;
  private readonly token?: string;

  constructor(url: string, token?: string) {
    this.url = url;
    this.token = token || undefined;
    if (url.startsWith('unix:')) {
      this.socket = url.slice('unix:'.length);
      if (!this.socket) {
        throw new TypeError('sandboxrun: unix: needs a socket path, e.g. unix:/run/sandboxrun.sock');
      }
      return;
    }
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new TypeError(`sandboxrun: URL ${JSON.stringify(url)}: give http://host:port, https://host:port or unix:/path`);
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.host) {
      throw new TypeError(`sandboxrun: URL ${JSON.stringify(url)}: give http://host:port, https://host:port or unix:/path`);
    }
    if (u.pathname !== '/' && u.pathname !== '') {
      throw new TypeError(`sandboxrun: URL ${JSON.stringify(url)} has a path; give the server's root, e.g. ${u.origin}`);
    }
    this.base = u.origin;
  }

  /** Sends the request; an answer other than 2xx is thrown as its typed error. */
  async send(req: Sent): Promise<Reply> {
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    if (this.token) {
      headers['Authorization'] = `Bearer ${this.token}`;
    }
    const reply = this.socket ? await this.viaSocket(req, headers) : await this.viaFetch(req, headers);
    if (reply.status >= 200 && reply.status < 300) {
      return reply;
    }
    if (reply.status === 0 || (reply.status >= 300 && reply.status < 400)) {
      await readAll(reply.body).catch(() => undefined);
      const location = reply.header('location');
      throw new RedirectError(
        `${req.method} ${req.path} answered a redirect${location ? ` to ${JSON.stringify(location)}` : ''}, not followed: the sandboxrun API answers none, so the server (or a proxy) is not the one expected`,
        { status: reply.status || undefined, location },
      );
    }
    const text = new TextDecoder().decode(await readAll(reply.body));
    let body: ErrorBody;
    try {
      body = JSON.parse(text) as ErrorBody;
      if (typeof body?.error !== 'string') {
        throw new Error('not an error body');
      }
    } catch {
      body = { error: text.trim() || `${req.method} ${req.path}: status ${reply.status}` };
    }
    const ra = Number(reply.header('retry-after'));
    throw errorForStatus(reply.status, body, Number.isFinite(ra) && ra >= 0 ? ra : undefined);
  }

  private async viaFetch(req: Sent, headers: Record<string, string>): Promise<Reply> {
    let res: Response;
    try {
      // A redirect of anything but a read is handed back, never followed
      // with the same method onto another resource.
      const redirect = req.method === 'GET' || req.method === 'HEAD' ? 'follow' : 'manual';
      res = await fetch(this.base + req.path, { method: req.method, headers, body: req.body, signal: req.signal, redirect });
    } catch (err) {
      if (req.signal?.aborted) {
        throw err;
      }
      throw new TransportError(`${req.method} ${this.base}${req.path}: ${describe(err)}`);
    }
    const stream = res.body as unknown as AsyncIterable<Uint8Array> | null;
    return {
      status: res.status,
      header: (name) => res.headers.get(name) ?? undefined,
      body: stream ?? empty(),
    };
  }

  private viaSocket(req: Sent, headers: Record<string, string>): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const creq = httpRequest({ socketPath: this.socket!, path: req.path, method: req.method, headers: { Host: 'sandboxrun', ...headers }, signal: req.signal });
      creq.on('response', (res) => {
        resolve({
          status: res.statusCode ?? 0,
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return Array.isArray(v) ? v[0] : v;
          },
          body: res,
        });
      });
      creq.on('error', (err) => {
        reject(req.signal?.aborted ? err : new TransportError(`${req.method} unix:${this.socket}${req.path}: ${describe(err)}`));
      });
      if (req.body !== undefined) {
        creq.write(req.body);
      }
      creq.end();
    });
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

async function* empty(): AsyncIterable<Uint8Array> {}

export async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    n += chunk.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export async function readJSON<T>(body: AsyncIterable<Uint8Array>): Promise<T> {
  const text = new TextDecoder().decode(await readAll(body));
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new TransportError(`the server answered something that is not JSON: ${describe(err)}`);
  }
}

/** The lines of a body, decoded as UTF-8 across chunk boundaries. */
export async function* lines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) {
        yield line;
      }
    }
  }
  buf += dec.decode();
  if (buf.trim()) {
    yield buf;
  }
}
