// The client: every endpoint of the HTTP API, or the local CLI when no URL
// is configured.
import { LocalModeError, PartialListError, SandboxrunError, ServerError } from './errors.js';
import { Local, type Decision, type Kind } from './local.js';
import { OPERATIONS, pathOf } from './operations.js';
import { Transport, lines, readAll, readJSON, type Reply } from './transport.js';
import type {
  Activation,
  ErrorBody,
  Event,
  ExplainRequest,
  Explanation,
  FileEntry,
  OutputEvent,
  Result,
  RunOptions,
  SessionInfo,
  SkillSummary,
  SkillUpload,
  SkillVersion,
  SkillVersions,
  Snapshot,
  Status,
  StoredFile,
  Usage,
} from './types.js';

export interface ClientOptions {
  /** http://host:port, https://host:port or unix:/path (default $SANDBOXRUN_URL); none: local mode */
  url?: string;
  /** bearer token (default $SANDBOXRUN_TOKEN) */
  token?: string;
  /** local mode: the CLI to run (default $SANDBOXRUN_BIN, else sandboxrun on PATH) */
  bin?: string;
  /** local mode: --skills (default the CLI's: $SANDBOXRUN_SKILLS, else ./skills) */
  skills?: string;
  /** local mode: --policy */
  policy?: string;
  /** local mode: the host folder mounted at /workspace (default: a fresh empty folder per call) */
  workspace?: string;
}

type Body = Uint8Array | string;

/** The run options the server takes, out of the client's options. */
function requestBody(key: string, target: string, opts: RunOptions): string {
  const body: Record<string, unknown> = { [key]: target };
  for (const k of ['args', 'argv', 'env', 'timeout', 'memory_mib', 'cpus', 'session', 'usage_every_ms'] as const) {
    if (opts[k] !== undefined) body[k] = opts[k];
  }
  if (opts.cwd !== undefined || opts.workspace !== undefined) {
    throw new LocalModeError('cwd and workspace are local-mode options: a server starts runs in /workspace, a session\'s folder or an empty one');
  }
  return JSON.stringify(body);
}

/** Local mode takes no usage samples: the CLI reports only the Result. */
function noLocalUsage(opts: RunOptions): RunOptions {
  if (opts.usage_every_ms) {
    throw new LocalModeError('usage_every_ms: live usage samples come from a server; locally the Result has cpu_time_ms and peak_rss_kb');
  }
  return opts;
}

const KEYS: Record<Kind, string> = { run: 'script', exec: 'command', python: 'code' };

/**
 * A sandboxrun client. With a URL every call goes to that server; without
 * one, runs, skills and activation go through the sandboxrun CLI on this
 * host with the same return types (sessions, files, health and metrics
 * need a server). A Client holds no connection: share one.
 */
export class Client {
  private readonly http?: Transport;
  private readonly local?: Local;

  constructor(opts: ClientOptions = {}) {
    const url = opts.url || process.env.SANDBOXRUN_URL || '';
    const token = opts.token || process.env.SANDBOXRUN_TOKEN || '';
    if (url) {
      this.http = new Transport(url, token);
      return;
    }
    this.local = new Local({
      bin: opts.bin || process.env.SANDBOXRUN_BIN || 'sandboxrun',
      skills: opts.skills,
      policy: opts.policy,
      workspace: opts.workspace,
    });
  }

  /** True when calls run the CLI on this host rather than a server. */
  get isLocal(): boolean {
    return this.local !== undefined;
  }

  /** The server's URL ("" in local mode). */
  get url(): string {
    return this.http?.url ?? '';
  }

  private server(what: string): Transport {
    if (!this.http) throw new LocalModeError(`${what} needs a server: set SANDBOXRUN_URL or pass {url}`);
    return this.http;
  }

  private async send(
    op: keyof typeof OPERATIONS,
    params: Record<string, string> = {},
    extra: { body?: Body; headers?: Record<string, string>; query?: string; signal?: AbortSignal } = {},
  ): Promise<Reply> {
    const o = OPERATIONS[op];
    const path = pathOf(o.path, params) + (extra.query ?? '');
    return this.server(op).send({ method: o.method, path, headers: extra.headers, body: extra.body, signal: extra.signal });
  }

  private async json<T>(op: keyof typeof OPERATIONS, params: Record<string, string> = {}, extra: { body?: Body; headers?: Record<string, string>; query?: string; signal?: AbortSignal } = {}): Promise<T> {
    const reply = await this.send(op, params, extra);
    return readJSON<T>(reply.body);
  }

  private async none(op: keyof typeof OPERATIONS, params: Record<string, string>): Promise<void> {
    const reply = await this.send(op, params);
    await readAll(reply.body);
  }

  // -- usage ---------------------------------------------------------------

  /**
   * GET /v1/usage: what this token used, per window, with its quotas. A run
   * past a quota is a BusyError naming the quota, its retryAfter the
   * seconds until the next window.
   */
  async usage(): Promise<Usage> {
    return this.json<Usage>('getUsage');
  }

  /** GET /v1/usage?all=true: every token's use by label, for a token the policy lists under tenants.operators (RefusedError otherwise). */
  async usageAll(): Promise<Usage[]> {
    return (await this.json<{ tenants: Usage[] }>('getUsage', {}, { query: '?all=true' })).tenants;
  }

  // -- health and description ----------------------------------------------

  /** GET /healthz: the server process answers. */
  healthz(): Promise<Status> {
    return this.json<Status>('healthz');
  }

  /** GET /readyz: the engine answers and the runner image is present (else UnavailableError with the reason). */
  readyz(): Promise<Status> {
    return this.json<Status>('readyz');
  }

  /** GET /metrics: Prometheus text (when the server serves metrics). */
  async metrics(): Promise<string> {
    const reply = await this.send('metrics');
    return new TextDecoder().decode(await readAll(reply.body));
  }

  /** GET /v1/openapi.json: the server's API description. */
  openapi(): Promise<Record<string, unknown>> {
    return this.json<Record<string, unknown>>('openapi');
  }

  /** The skills, name and description only. */
  async skills(): Promise<SkillSummary[]> {
    if (this.local) return this.local.skills();
    return (await this.json<{ skills: SkillSummary[] }>('listSkills')).skills;
  }

  /**
   * Uploads one skill, a tar (or a zip with media 'application/zip') holding
   * SKILL.md at its root or in one top folder; the same content again returns
   * the version already stored. Pin it as name@version or name@sha256:<hex>.
   */
  uploadSkill(archive: Uint8Array, media = 'application/x-tar'): Promise<SkillUpload> {
    return this.json<SkillUpload>('uploadSkill', {}, { body: archive, headers: { 'Content-Type': media } });
  }

  /** The versions of one of your uploaded skills, oldest first. */
  async skillVersions(name: string): Promise<SkillVersion[]> {
    return (await this.json<SkillVersions>('listSkillVersions', { name })).versions;
  }

  /** Removes every version of one of your uploaded skills. */
  deleteSkill(name: string): Promise<void> {
    return this.none('deleteSkill', { name });
  }

  /** Removes one version (a version or sha256:<hex>) of an uploaded skill. */
  deleteSkillVersion(name: string, version: string): Promise<void> {
    return this.none('deleteSkillVersion', { name, version });
  }

  /** A skill's instructions with {baseDir} resolved, its files and allowed tools. */
  activate(name: string): Promise<Activation> {
    if (this.local) return this.local.activate(name);
    return this.json<Activation>('activateSkill', { name });
  }

  /** Local mode only: sandboxrun's command checker on a command, without running it. */
  checkCommand(skill: string, command: string): Promise<Decision> {
    if (!this.local) throw new LocalModeError('checkCommand runs the local CLI; on a server use explain(skill, { command })');
    return this.local.checkCommand(skill, command);
  }

  /**
   * What run (script), exec (command) or python (code) would be, decided as
   * that run would decide it, without running it: limits, image, network,
   * runner, workspace. A refusal throws RefusedError (part, reason,
   * suggest; explanation is what was decided before it). Locally the CLI
   * judges commands only (exec --dry-run) and the answer holds the
   * decision; a script or code needs a server (LocalModeError).
   */
  async explain(skill: string, req: ExplainRequest): Promise<Explanation> {
    const given = (['script', 'command', 'code'] as const).filter((k) => req[k]);
    if (given.length !== 1) throw new TypeError('sandboxrun: explain takes exactly one of script, command and code');
    const key = given[0];
    if (this.local) {
      if (key !== 'command') throw new LocalModeError('explain of a script or code needs a server; locally only commands are judged (exec --dry-run)');
      return this.local.explainCommand(skill, req.command ?? '', req);
    }
    const { signal, ...opts } = req;
    return this.json<Explanation>('explain', { name: skill }, {
      body: requestBody(key, req[key] ?? '', opts),
      headers: { 'Content-Type': 'application/json' },
      signal,
    });
  }

  // -- runs ------------------------------------------------------------------

  /** Runs one of the skill's scripts (scripts/x.py); args arrive as JSON on its stdin. */
  run(skill: string, script: string, opts: RunOptions = {}): Promise<Result> {
    return this.execute('run', skill, script, opts);
  }

  /** Runs a command as an agent's Bash tool passes it, checked against the skill's allowed-tools. */
  exec(skill: string, command: string, opts: RunOptions = {}): Promise<Result> {
    return this.execute('exec', skill, command, opts);
  }

  /** Runs Python source in the skill's sandbox. */
  python(skill: string, code: string, opts: RunOptions = {}): Promise<Result> {
    return this.execute('python', skill, code, opts);
  }

  /**
   * As run, yielding stdout and stderr events as they come and the Result
   * last; usage samples go to opts.onUsage (every opts.usage_every_ms).
   */
  streamRun(skill: string, script: string, opts: RunOptions = {}): AsyncGenerator<OutputEvent | Result> {
    return this.stream('run', skill, script, opts);
  }

  /** As exec, yielding stdout and stderr events as they come and the Result last. */
  streamExec(skill: string, command: string, opts: RunOptions = {}): AsyncGenerator<OutputEvent | Result> {
    return this.stream('exec', skill, command, opts);
  }

  /** As python, yielding stdout and stderr events as they come and the Result last. */
  streamPython(skill: string, code: string, opts: RunOptions = {}): AsyncGenerator<OutputEvent | Result> {
    return this.stream('python', skill, code, opts);
  }

  private async execute(kind: Kind, skill: string, target: string, opts: RunOptions): Promise<Result> {
    if (this.local) return this.local.execute(kind, skill, target, noLocalUsage(opts));
    return this.json<Result>(kind, { name: skill }, {
      body: requestBody(KEYS[kind], target, opts),
      headers: { 'Content-Type': 'application/json' },
      signal: opts.signal,
    });
  }

  private async *stream(kind: Kind, skill: string, target: string, opts: RunOptions): AsyncGenerator<OutputEvent | Result> {
    if (this.local) {
      // The CLI gives the Result only at the end: locally each stream
      // comes then, in one piece, before it.
      const res = await this.local.execute(kind, skill, target, noLocalUsage(opts));
      if (res.stdout) yield { type: 'stdout', data: res.stdout };
      if (res.stderr) yield { type: 'stderr', data: res.stderr };
      yield res;
      return;
    }
    // Leaving the loop early aborts the request, and the server cancels
    // the run when its client goes.
    const ac = new AbortController();
    const onAbort = () => ac.abort();
    opts.signal?.addEventListener('abort', onAbort);
    try {
      const reply = await this.send(kind, { name: skill }, {
        body: requestBody(KEYS[kind], target, { ...opts, signal: undefined }),
        headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
        signal: ac.signal,
      });
      for await (const line of lines(reply.body)) {
        const ev = JSON.parse(line) as Event;
        if (ev.type === 'result' && ev.result) {
          yield ev.result;
          return;
        }
        if (ev.type === 'error') {
          const body: ErrorBody = ev.error ?? { error: 'the run failed' };
          // The status line went out with the first event: what failed
          // after it is the server's or the sandbox's.
          throw new ServerError(body.error, { status: 500, body });
        }
        if (ev.type === 'stdout' || ev.type === 'stderr') yield { type: ev.type, data: ev.data ?? '' };
        if (ev.type === 'usage' && ev.usage) opts.onUsage?.(ev.usage);
      }
      throw new SandboxrunError(`POST ${OPERATIONS[kind].path}: the stream ended without a Result`);
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      ac.abort();
    }
  }

  // -- sessions and files -----------------------------------------------------

  /** A new session: a workspace kept across calls. ttl in seconds or a duration ("30m"). */
  async createSession(ttl?: number | string): Promise<Session> {
    const info = await this.json<SessionInfo>('createSession', {}, {
      body: JSON.stringify(ttl === undefined ? {} : { ttl }),
      headers: { 'Content-Type': 'application/json' },
    });
    return new Session(this, info);
  }

  /** Creates a session, calls fn with it, and deletes it when fn settles. */
  async withSession<T>(fn: (s: Session) => Promise<T>, ttl?: number | string): Promise<T> {
    const s = await this.createSession(ttl);
    try {
      return await fn(s);
    } finally {
      await s.delete();
    }
  }

  /**
   * The caller's sessions on every replica. Throws PartialListError, with
   * the sessions that came in `items`, when a replica did not answer.
   */
  async listSessions(): Promise<SessionInfo[]> {
    const doc = await this.json<{ sessions: SessionInfo[]; partial?: boolean; unreachable?: string[] }>('listSessions');
    if (doc.partial) {
      const away = doc.unreachable ?? [];
      const msg = away.length > 0
        ? `the list lacks the sessions of replicas ${away.join(', ')}, which did not answer: retry in a few seconds`
        : "the list holds one replica's sessions: the server was started without --replicas";
      throw new PartialListError<SessionInfo>(msg, doc.sessions, away);
    }
    return doc.sessions;
  }

  getSession(id: string): Promise<SessionInfo> {
    return this.json<SessionInfo>('getSession', { id });
  }

  /** Removes a session: a run in it is cancelled, its files removed. */
  deleteSession(id: string): Promise<void> {
    return this.none('deleteSession', { id });
  }

  /** A new session with the files of session id as they are now, or as its snapshot holds them. */
  async fork(id: string, snapshot?: string, ttl?: number | string): Promise<Session> {
    const body: Record<string, unknown> = { from: snapshot === undefined ? { session: id } : { session: id, snapshot } };
    if (ttl !== undefined) body.ttl = ttl;
    const info = await this.json<SessionInfo>('createSession', {}, {
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
    });
    return new Session(this, info);
  }

  /** Saves the session's files as they are now (files only). */
  createSnapshot(id: string, label?: string): Promise<Snapshot> {
    return this.json<Snapshot>('createSnapshot', { id }, {
      body: JSON.stringify(label === undefined ? {} : { label }),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  /** The session's snapshots, oldest first. */
  async listSnapshots(id: string): Promise<Snapshot[]> {
    return (await this.json<{ snapshots: Snapshot[] }>('listSnapshots', { id })).snapshots;
  }

  deleteSnapshot(id: string, snapshot: string): Promise<void> {
    return this.none('deleteSnapshot', { id, snap: snapshot });
  }

  /** Makes the session's workspace exactly the snapshot: files added since go, deleted ones come back. */
  restore(id: string, snapshot: string): Promise<SessionInfo> {
    return this.json<SessionInfo>('restoreSnapshot', { id }, {
      body: JSON.stringify({ snapshot }),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  /** Writes one file (folders on the way are made); path is relative and clean (out/report.csv). */
  putFile(id: string, path: string, data: Uint8Array | string): Promise<StoredFile> {
    return this.json<StoredFile>('putFile', { id, path }, { body: data, headers: { 'Content-Type': 'application/octet-stream' } });
  }

  /** One file's bytes. */
  async getFile(id: string, path: string): Promise<Uint8Array> {
    return readAll((await this.send('getFile', { id, path })).body);
  }

  /** Removes a file, a link (never its target) or a folder with what it holds. */
  deleteFile(id: string, path: string): Promise<void> {
    return this.none('deleteFile', { id, path });
  }

  /** The workspace's files, or those of the folder path; links are shown, never followed. */
  async listFiles(id: string, path?: string): Promise<FileEntry[]> {
    const query = path ? `?path=${encodeURIComponent(path)}` : '';
    return (await this.json<{ files: FileEntry[] }>('listFiles', { id }, { query })).files;
  }

  /** The whole workspace as a tar (links as links). */
  async getTar(id: string): Promise<Uint8Array> {
    return readAll((await this.send('listFiles', { id }, { headers: { Accept: 'application/x-tar' } })).body);
  }

  /** Unpacks a tar of regular files and folders into the workspace, all or nothing. */
  async putTar(id: string, tar: Uint8Array): Promise<StoredFile[]> {
    return (await this.json<{ files: StoredFile[] }>('putTar', { id }, { body: tar, headers: { 'Content-Type': 'application/x-tar' } })).files;
  }
}

/** A session bound to its client: the calls above without the id. */
export class Session {
  readonly client: Client;
  info: SessionInfo;

  constructor(client: Client, info: SessionInfo) {
    this.client = client;
    this.info = info;
  }

  get id(): string {
    return this.info.id;
  }

  async refresh(): Promise<SessionInfo> {
    this.info = await this.client.getSession(this.id);
    return this.info;
  }

  /** Deletes the session; one already gone is not an error. */
  async delete(): Promise<void> {
    try {
      await this.client.deleteSession(this.id);
    } catch (err) {
      if (!(err instanceof SandboxrunError && err.status === 404)) throw err;
    }
  }

  upload(path: string, data: Uint8Array | string): Promise<StoredFile> {
    return this.client.putFile(this.id, path, data);
  }
  download(path: string): Promise<Uint8Array> {
    return this.client.getFile(this.id, path);
  }
  remove(path: string): Promise<void> {
    return this.client.deleteFile(this.id, path);
  }
  files(path?: string): Promise<FileEntry[]> {
    return this.client.listFiles(this.id, path);
  }
  uploadTar(tar: Uint8Array): Promise<StoredFile[]> {
    return this.client.putTar(this.id, tar);
  }
  downloadTar(): Promise<Uint8Array> {
    return this.client.getTar(this.id);
  }
  run(skill: string, script: string, opts: RunOptions = {}): Promise<Result> {
    return this.client.run(skill, script, { ...opts, session: this.id });
  }
  exec(skill: string, command: string, opts: RunOptions = {}): Promise<Result> {
    return this.client.exec(skill, command, { ...opts, session: this.id });
  }
  python(skill: string, code: string, opts: RunOptions = {}): Promise<Result> {
    return this.client.python(skill, code, { ...opts, session: this.id });
  }
}
