// Local mode: the same calls through the sandboxrun CLI on this host. The
// CLI prints the Result as JSON (--json); its exit status says what a
// missing Result means: 2 refused before running, 3 the environment failed
// before the start, 125 the sandbox failed mid-run.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LocalModeError,
  NotFoundError,
  RefusedError,
  SandboxrunError,
  ServerError,
  UnavailableError,
} from './errors.js';
import type { Activation, ExplainRequest, Explanation, Result, RunOptions, SkillSummary } from './types.js';

const EXIT_REFUSED = 2;
const EXIT_ENV = 3;
const EXIT_MIDRUN = 125;

export interface LocalConfig {
  bin: string;
  skills?: string;
  policy?: string;
  workspace?: string;
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export type Kind = 'run' | 'exec' | 'python';

/** The dry-run decision of sandboxrun's command checker. */
export interface Decision {
  allowed: boolean;
  skill: string;
  command: string;
  part?: string;
  reason?: string;
  suggest?: string;
}

export class Local {
  readonly bin: string;
  private readonly globals: string[] = [];
  private readonly workspace?: string;

  constructor(cfg: LocalConfig) {
    this.bin = cfg.bin;
    if (cfg.skills) this.globals.push('--skills', cfg.skills);
    if (cfg.policy) this.globals.push('--policy', cfg.policy);
    this.workspace = cfg.workspace;
  }

  private cli(args: string[], stdin = '', signal?: AbortSignal): Promise<Ran> {
    const argv = [args[0], ...this.globals, ...args.slice(1)];
    return new Promise((resolve, reject) => {
      // The CLI's environment is this process's: it needs DOCKER_HOST,
      // SANDBOXRUN_POLICY and the like. The sandbox never sees it; a run
      // gets only the variables the request names.
      const child = spawn(this.bin, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: process.env, signal });
      const out: Uint8Array[] = [];
      const err: Uint8Array[] = [];
      child.stdout?.on('data', (c) => out.push(c));
      child.stderr?.on('data', (c) => err.push(c));
      child.stdin?.on('error', () => {}); // a CLI that exits before reading its stdin
      child.on('error', (e) => {
        if (e.code === 'ENOENT') {
          reject(new SandboxrunError(`the sandboxrun CLI ${JSON.stringify(this.bin)} was not found: set SANDBOXRUN_BIN, put sandboxrun on PATH, or set SANDBOXRUN_URL`));
        } else {
          reject(e);
        }
      });
      child.on('close', (code) => {
        resolve({ code: code ?? -1, stdout: utf8(out), stderr: utf8(err) });
      });
      child.stdin?.end(stdin);
    });
  }

  async skills(): Promise<SkillSummary[]> {
    const r = await this.cli(['list', '--format', 'json']);
    if (r.code !== 0) throw failure(r);
    const list = JSON.parse(r.stdout || '[]') as Array<SkillSummary & { location?: string }>;
    return list.map((s) => ({ name: s.name, description: s.description, when_to_use: s.when_to_use, source: 'operator' as const }));
  }

  async activate(name: string): Promise<Activation> {
    const r = await this.cli(['show', '--json', name]);
    if (r.code !== 0) throw failure(r);
    return JSON.parse(r.stdout) as Activation;
  }

  async checkCommand(skill: string, command: string): Promise<Decision> {
    const r = await this.cli(['exec', '--dry-run', '--json', skill, '--', command]);
    if ((r.code !== 0 && r.code !== EXIT_REFUSED) || !r.stdout.trim()) throw failure(r);
    return JSON.parse(r.stdout) as Decision;
  }

  /**
   * The CLI's judgement of a command with the request's limits and
   * environment (exec --dry-run): the decision, without the limits and
   * image a server's explanation adds.
   */
  async explainCommand(skill: string, command: string, opts: ExplainRequest): Promise<Explanation> {
    if (opts.session) throw new LocalModeError('sessions live on a server: set SANDBOXRUN_URL');
    if (opts.argv?.length) throw new LocalModeError('argv does not go with a command: write the arguments into the command');
    const r = await this.cli(['exec', '--dry-run', '--json', ...requestFlags(opts), skill, '--', command]);
    if ((r.code !== 0 && r.code !== EXIT_REFUSED) || !r.stdout.trim()) throw failure(r);
    const d = JSON.parse(r.stdout) as Decision;
    const explained: Explanation = {
      skill: d.skill ?? skill, action: 'command', command: d.command ?? '',
      limits: { timeout_s: 0, memory_bytes: 0, cpus: 0, pids: 0, output_bytes: 0, network: false },
      skill_image: false, runner: '', workspace_writable: false, write_granted: false, writable: false,
      allowed_tools: [], policy_digest: '',
    };
    if (d.allowed) return explained;
    let message = d.reason || 'refused';
    if (d.part) message = `command denied at ${JSON.stringify(d.part)}: ${message}`;
    throw new RefusedError(message, {
      body: { error: message, part: d.part, reason: d.reason, suggest: d.suggest, explanation: explained },
    });
  }

  /** Runs a script (run), a command (exec) or Python code (python). */
  async execute(kind: Kind, skill: string, target: string, opts: RunOptions): Promise<Result> {
    if (opts.session) {
      throw new LocalModeError('sessions live on a server: set SANDBOXRUN_URL, or give the local client a workspace folder');
    }
    if (kind === 'python' && opts.args !== undefined) {
      throw new LocalModeError('python with args needs a server: locally the CLI hands the code to python3 on its stdin');
    }
    const argv = opts.argv ?? [];
    if (kind === 'exec' && argv.length > 0) {
      throw new LocalModeError('exec takes no argv: a command carries its own arguments');
    }
    const flags = ['--json'];
    let stdin = '';
    if (kind !== 'python' && opts.args !== undefined) {
      flags.push('--args', '-');
      stdin = JSON.stringify(opts.args);
    }
    flags.push(...requestFlags(opts));
    if (opts.cwd) flags.push('--cwd', opts.cwd);
    const positional =
      kind === 'run' ? [skill, target, '--', ...argv] : kind === 'exec' ? [skill, '--', target] : [skill, '--', ...argv];
    const temps: string[] = [];
    const started = Date.now();
    let r: Ran;
    try {
      if (kind === 'python') {
        // A file, not /dev/stdin: node gives a child a socket for stdin,
        // which /dev/stdin cannot be opened on.
        const dir = await mkdtemp(join(tmpdir(), 'sandboxrun-code-'));
        temps.push(dir);
        await writeFile(join(dir, 'code.py'), target, { mode: 0o600 });
        flags.push('--file', join(dir, 'code.py'));
      }
      let workspace = opts.workspace ?? this.workspace;
      if (!workspace) {
        // A fresh empty folder: the run sees nothing of this host that the
        // caller did not name (the CLI's own default is its working folder).
        workspace = await mkdtemp(join(tmpdir(), 'sandboxrun-ws-'));
        temps.push(workspace);
        await chmod(workspace, 0o755); // empty, so nothing to hide; the sandbox's uid must enter it
      }
      r = await this.cli([kind, ...flags, '--workspace', workspace, ...positional], stdin, opts.signal);
    } finally {
      for (const dir of temps) await rm(dir, { recursive: true, force: true });
    }
    const doc = jsonObject(r.stdout);
    let res: Result;
    if (kind === 'python' && doc) {
      if ((r.code === EXIT_REFUSED || r.code === EXIT_ENV) && !doc.stdout && !doc.stderr) {
        throw failure({ ...r, stderr: r.stderr || String(doc.error ?? '') });
      }
      res = fromPythonShape(doc, Date.now() - started);
    } else if (doc) {
      res = doc as unknown as Result;
    } else {
      throw failure(r);
    }
    if (r.code === EXIT_MIDRUN) {
      throw new ServerError(res.error || r.stderr.trim() || 'the sandbox failed mid-run', { result: res });
    }
    return res;
  }
}

function utf8(parts: Uint8Array[]): string {
  const dec = new TextDecoder();
  return parts.map((p) => dec.decode(p, { stream: true })).join('') + dec.decode();
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  if (!text.trim()) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const SIGNALS: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM' };

/**
 * The CLI's python --json answers in the agent-tool shape
 * {skill_name, stdout, stderr, returncode, timed_out, error}; this maps it
 * onto the Result's fields. Those it does not carry (id, limits, image)
 * stay empty.
 */
function fromPythonShape(doc: Record<string, unknown>, elapsedMs: number): Result {
  const timedOut = Boolean(doc.timed_out);
  let rc = Number(doc.returncode ?? -1);
  let signal = '';
  if (timedOut) rc = 124;
  else if (rc < 0) signal = SIGNALS[-rc] ?? `signal ${-rc}`;
  const stdout = String(doc.stdout ?? '');
  const stderr = String(doc.stderr ?? '');
  let output: unknown = null;
  try {
    output = stdout.trim() ? JSON.parse(stdout) : null;
  } catch {
    output = null;
  }
  const enc = new TextEncoder();
  return {
    id: '',
    skill: String(doc.skill_name ?? ''),
    command: [],
    exit_code: rc,
    success: rc === 0 && !timedOut,
    stdout,
    stderr,
    stdout_truncated: false,
    stderr_truncated: false,
    stdout_bytes: enc.encode(stdout).length,
    stderr_bytes: enc.encode(stderr).length,
    output,
    timed_out: timedOut,
    oom_killed: false,
    signal,
    duration_ms: elapsedMs,
    error: doc.error ? String(doc.error) : undefined,
    limits: { timeout_s: 0, memory_bytes: 0, cpus: 0, pids: 0, output_bytes: 0, network: false },
    image: '',
    runtime: 'python',
  };
}

/** The CLI flags of a request's environment and limits. */
function requestFlags(opts: { env?: Record<string, string>; timeout?: number | string; memory_mib?: number; cpus?: number }): string[] {
  const flags: string[] = [];
  for (const [k, v] of Object.entries(opts.env ?? {})) flags.push('--env', `${k}=${v}`);
  if (opts.timeout !== undefined) {
    flags.push('--timeout', typeof opts.timeout === 'number' ? `${opts.timeout}s` : opts.timeout);
  }
  if (opts.memory_mib) flags.push('--memory', `${Math.trunc(opts.memory_mib)}m`);
  if (opts.cpus) flags.push('--cpus', String(opts.cpus));
  return flags;
}

function failure(r: Ran): SandboxrunError {
  let message = r.stderr.trim().replace(/^sandboxrun: /, '') || `sandboxrun exited with status ${r.code}`;
  if (r.code === EXIT_REFUSED) {
    // The CLI's only channel for the kind of refusal is its message.
    if (message.startsWith('skill not found')) return new NotFoundError(message);
    return new RefusedError(message);
  }
  if (r.code === EXIT_ENV) return new UnavailableError(message);
  message = message || `sandboxrun exited with status ${r.code}`;
  return new SandboxrunError(message);
}
