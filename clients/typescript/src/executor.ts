/**
 * Script Executor, sandboxed: the ScriptExecutor / createScriptExecutor
 * interface of prompt-scoped script tools, with every script run by
 * sandboxrun in an ephemeral, locked-down container instead of a host
 * subprocess. Change one import and existing callers keep their code:
 *
 *   import { ScriptExecutor, createScriptExecutor } from 'sandboxrun/script-executor';
 *
 * Kept as they were: the names, the config (defaultTimeout and maxTimeout
 * in milliseconds, debug, baseEnv), execute(request, tool) and its result
 * {success, output, stdout, stderr, exitCode, durationMs, error?}, input
 * validation against the tool's JSON Schema (required fields and basic
 * types, JSON strings normalised for array/object fields), runtime
 * detection (tool.runtime, else the extension, else shell), the inputs as
 * JSON on stdin, output parsed as JSON with the {output: text} fallback,
 * the error results and messages (tool disabled, script not found,
 * validation failed, no interpreter, timed out after N ms), and the
 * SCRIPT_TOOL_ID, SCRIPT_PROMPT_ID, SCRIPT_TOOL_DIR variables.
 *
 * What differs, and why:
 * - Where it runs. The tool's folder must be a skill folder (a SKILL.md,
 *   the script under scripts/): sandboxrun runs skills, mounted read-only
 *   at /skills/<name>, with no network unless the skill declares it, and
 *   memory, CPU, process and output caps. The seed ran the script as the
 *   host user with full filesystem and network access.
 * - Which sandboxrun. A server when SANDBOXRUN_URL is set (or a Client is
 *   given in config.client): the tool's folder is then named on the
 *   server by its folder name (config.skillName to map it otherwise).
 *   Else the local CLI (SANDBOXRUN_BIN, else PATH) runs the host folder.
 * - Environment. Nothing of the host's environment is inherited, not even
 *   the seed's allowlist (PATH, HOME, NODE_OPTIONS, PYTHONPATH...): host
 *   paths mean nothing inside the container and code-loading variables
 *   would let a tool rewrite the interpreter. baseEnv, tool.env and
 *   request.env still reach the script; sandboxrun refuses reserved and
 *   code-loading names, which makes the run an error result naming them.
 *   SCRIPT_TOOL_DIR is the tool's folder inside the sandbox.
 * - Working directory. Locally the script starts in its tool's folder
 *   (read-only); through a server it starts in /workspace, an empty
 *   folder, since the API takes no working directory. tool.workingDir is
 *   not honoured: a script that needs its folder reads SCRIPT_TOOL_DIR.
 * - Limits. The timeout is also held to the operator policy's ceiling;
 *   stdout and stderr are capped (a note is appended to stderr when cut);
 *   the seed kept everything in memory.
 * - Runtime. The interpreter is the one sandboxrun picks for the script's
 *   extension (.py python3, .js/.mjs/.cjs node, .sh/.bash bash), else its
 *   shebang line, else the skill's runtime: field. A tool.runtime that
 *   contradicts the extension is an error result instead of a silent
 *   switch.
 * - Signals. A script killed by a signal has exitCode -N and success
 *   false; the seed reported exit code 0 and success for it.
 * - Types. An integer satisfies a "number" field, as JSON Schema says;
 *   the seed refused it.
 */
import { existsSync } from 'node:fs';
import { basename, extname, isAbsolute, relative, sep } from 'node:path';
import { Client } from './client.js';
import { SandboxrunError } from './errors.js';
import type { Result } from './types.js';
import { validateInputs, type JSONSchemaDefinition, type ScriptInputValidationResult } from './validate.js';

export type { JSONSchemaDefinition, JSONSchemaProperty, ScriptInputValidationResult } from './validate.js';

/** A script tool as the loader hands it over. */
export interface LoadedScriptTool {
  id: string;
  promptId: string;
  name?: string;
  description?: string;
  /** the tool's folder: a skill folder (SKILL.md, scripts/) */
  toolDir: string;
  /** the script, under toolDir/scripts/ */
  absoluteScriptPath: string;
  runtime?: 'python' | 'node' | 'shell' | 'auto' | string;
  inputSchema: JSONSchemaDefinition;
  enabled?: boolean;
  /** milliseconds */
  timeout?: number;
  env?: Record<string, string>;
  /** not honoured (see the module comment) */
  workingDir?: string;
}

export interface ScriptExecutionRequest {
  toolId: string;
  promptId: string;
  inputs: Record<string, unknown>;
  /** milliseconds */
  timeout?: number;
  env?: Record<string, string>;
}

export interface ScriptExecutionResult {
  success: boolean;
  output: unknown;
  stdout: string;
  stderr: string;
  exitCode: number;
  durationMs: number;
  error?: string;
}

export interface ScriptExecutorConfig {
  /** milliseconds (default 30000) */
  defaultTimeout?: number;
  /** milliseconds (default 300000) */
  maxTimeout?: number;
  debug?: boolean;
  baseEnv?: Record<string, string>;
  /** the sandboxrun client (default: new Client(), a server from SANDBOXRUN_URL, else the local CLI) */
  client?: Client;
  /** the skill's name on a server for a tool (default: the tool folder's name) */
  skillName?: (tool: LoadedScriptTool) => string;
}


/** Runtime command mappings: the runtimes a tool may name. */
const RUNTIME_COMMANDS: Record<string, string[]> = {
  python: ['python3', 'python'],
  node: ['node'],
  shell: ['bash', 'sh'],
};

/** Extension to runtime, for auto-detection (as the seed). */
const EXTENSION_TO_RUNTIME: Record<string, string> = {
  '.py': 'python',
  '.js': 'node',
  '.mjs': 'node',
  '.cjs': 'node',
  '.ts': 'node',
  '.sh': 'shell',
  '.bash': 'shell',
};

/** The runtime sandboxrun itself picks for an extension (policy/interpreter.go). */
const SANDBOXRUN_EXTENSIONS: Record<string, string> = {
  '.py': 'python',
  '.js': 'node',
  '.mjs': 'node',
  '.cjs': 'node',
  '.sh': 'shell',
  '.bash': 'shell',
};

/**
 * Script Executor Service: runs script tools in sandboxrun with timeout
 * enforcement, JSON I/O and the seed's result shape.
 *
 * @example
 * const executor = new ScriptExecutor({ defaultTimeout: 30000 });
 * const result = await executor.execute({ toolId: 'analyze_csv', promptId: 'data_analyzer', inputs: { file: 'data.csv' } }, loadedTool);
 * if (result.success) console.log('Output:', result.output);
 */
export class ScriptExecutor {
  private readonly defaultTimeout: number;
  private readonly maxTimeout: number;
  private readonly debug: boolean;
  private readonly baseEnv: Record<string, string>;
  private readonly skillName?: (tool: LoadedScriptTool) => string;
  private clientValue?: Client;
  private readonly baseDirs = new Map<string, Promise<string>>();

  constructor(config: ScriptExecutorConfig = {}) {
    this.defaultTimeout = config.defaultTimeout ?? 30000;
    this.maxTimeout = config.maxTimeout ?? 300000; // 5 minutes
    this.debug = config.debug ?? false;
    this.baseEnv = config.baseEnv ?? {};
    this.clientValue = config.client;
    this.skillName = config.skillName;
    if (this.debug) {
      console.error('[ScriptExecutor] Initialized with config:', {
        defaultTimeout: this.defaultTimeout,
        maxTimeout: this.maxTimeout,
      });
    }
  }

  /** Made on first use, so constructing an executor reads no environment. */
  private get client(): Client {
    this.clientValue ??= new Client();
    return this.clientValue;
  }

  /**
   * Executes a script tool with the given inputs. It never throws: every
   * failure is a result with success false and error set.
   */
  async execute(request: ScriptExecutionRequest, tool: LoadedScriptTool): Promise<ScriptExecutionResult> {
    const startTime = Date.now();
    if (tool.enabled === false) {
      return this.createErrorResult(startTime, 'Tool is disabled', -1);
    }
    const client = this.client;
    const rel = relative(tool.toolDir, tool.absoluteScriptPath);
    // Locally the host folder is what runs, so a missing script is known
    // here; a server has its own copy and answers for it.
    if ((client.isLocal && !existsSync(tool.absoluteScriptPath)) || rel.startsWith('..') || isAbsolute(rel)) {
      return this.createErrorResult(startTime, `Script not found: ${tool.absoluteScriptPath}`, -1);
    }
    const validation = this.validateInputs(request.inputs, tool.inputSchema);
    if (!validation.valid) {
      return this.createErrorResult(startTime, `Input validation failed: ${validation.errors.join('; ')}`, -1);
    }
    const runtime = this.resolveRuntime(tool);
    if (!RUNTIME_COMMANDS[runtime]) {
      return this.createErrorResult(startTime, `No interpreter found for runtime '${runtime}'`, -1);
    }
    const ext = extname(tool.absoluteScriptPath).toLowerCase();
    const picked = SANDBOXRUN_EXTENSIONS[ext];
    if (picked && picked !== runtime) {
      return this.createErrorResult(
        startTime,
        `Runtime '${runtime}' does not match the '${picked}' that sandboxrun runs ${ext} files with: rename the script or drop the tool's runtime`,
        -1,
      );
    }
    const timeout = this.resolveTimeout(request, tool);
    if (!(timeout > 0)) {
      return this.createErrorResult(startTime, `Timeout must be a positive number of milliseconds, got ${timeout}`, -1);
    }
    const skill = client.isLocal ? tool.toolDir : (this.skillName?.(tool) ?? basename(tool.toolDir));
    try {
      const env = this.buildEnvironment(request, tool, await this.baseDir(client, skill));
      if (this.debug) {
        console.error(`[ScriptExecutor] Running ${rel} of ${skill} in sandboxrun (${client.isLocal ? 'local CLI' : client.url}), timeout ${timeout}ms`);
      }
      const res = await client.run(skill, rel.split(sep).join('/'), {
        args: validation.normalizedInputs ?? request.inputs,
        env,
        timeout: timeout / 1000,
        ...(client.isLocal ? { cwd: 'skill' as const } : {}),
      });
      return { ...this.fromResult(res, timeout), durationMs: Date.now() - startTime };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const partial = error instanceof SandboxrunError ? error.result : undefined;
      const out = this.createErrorResult(startTime, message, -1);
      if (partial) {
        out.stdout = partial.stdout;
        out.stderr = partial.stderr;
      }
      return out;
    }
  }

  /** The tool's folder inside the sandbox, from the skill's activation (asked once per skill). */
  private baseDir(client: Client, skill: string): Promise<string> {
    let p = this.baseDirs.get(skill);
    if (!p) {
      p = client.activate(skill).then((a) => a.base_dir);
      p.catch(() => this.baseDirs.delete(skill));
      this.baseDirs.set(skill, p);
    }
    return p;
  }

  private fromResult(res: Result, timeout: number): Omit<ScriptExecutionResult, 'durationMs'> {
    let stderr = res.stderr;
    if (res.stdout_truncated || res.stderr_truncated) {
      stderr += `\nsandboxrun: output truncated at ${res.limits.output_bytes} bytes per stream (stdout ${res.stdout_bytes} bytes, stderr ${res.stderr_bytes} bytes written)\n`;
    }
    if (res.timed_out) {
      // The policy may hold the limit below what was asked: say the one that applied.
      const applied = res.limits.timeout_s ? Math.round(res.limits.timeout_s * 1000) : timeout;
      return { success: false, output: null, stdout: res.stdout, stderr, exitCode: -1, error: `Script timed out after ${applied}ms` };
    }
    const exitCode = res.exit_code;
    const success = exitCode === 0;
    const out: Omit<ScriptExecutionResult, 'durationMs'> = {
      success,
      output: this.parseOutput(res.stdout),
      stdout: res.stdout,
      stderr,
      exitCode,
    };
    if (!success) {
      out.error = res.stderr || (res.signal ? `Process killed by ${res.signal}` : `Process exited with code ${exitCode}`);
    }
    return out;
  }

  /**
   * Validates inputs against the tool's JSON Schema: required fields, and
   * the type of each field the schema types (null passes). JSON strings
   * given for array or object fields are parsed first; an empty string for
   * an optional one is dropped.
   */
  validateInputs(inputs: Record<string, unknown>, schema: JSONSchemaDefinition): ScriptInputValidationResult {
    return validateInputs(inputs, schema);
  }

  private resolveRuntime(tool: LoadedScriptTool): string {
    if (tool.runtime && tool.runtime !== 'auto') {
      return tool.runtime;
    }
    return EXTENSION_TO_RUNTIME[extname(tool.absoluteScriptPath).toLowerCase()] ?? 'shell';
  }

  private buildEnvironment(request: ScriptExecutionRequest, tool: LoadedScriptTool, toolDir: string): Record<string, string> {
    return {
      ...this.baseEnv,
      ...(tool.env ?? {}),
      ...(request.env ?? {}),
      SCRIPT_TOOL_ID: tool.id,
      SCRIPT_PROMPT_ID: tool.promptId,
      SCRIPT_TOOL_DIR: toolDir,
    };
  }

  private resolveTimeout(request: ScriptExecutionRequest, tool: LoadedScriptTool): number {
    const timeout = request.timeout ?? tool.timeout ?? this.defaultTimeout;
    return Math.min(timeout, this.maxTimeout);
  }

  /** Parses output as JSON, else wraps the text as {output: text}; empty output is null. */
  private parseOutput(stdout: string): unknown {
    const trimmed = stdout.trim();
    if (!trimmed) {
      return null;
    }
    try {
      return JSON.parse(trimmed);
    } catch {
      return { output: trimmed };
    }
  }

  private createErrorResult(startTime: number, error: string, exitCode: number): ScriptExecutionResult {
    return { success: false, output: null, stdout: '', stderr: '', exitCode, durationMs: Date.now() - startTime, error };
  }
}

/** Factory function with default configuration. */
export function createScriptExecutor(config?: ScriptExecutorConfig): ScriptExecutor {
  return new ScriptExecutor(config);
}

let defaultExecutor: ScriptExecutor | null = null;

/** The default ScriptExecutor instance, made on first use. */
export function getDefaultScriptExecutor(): ScriptExecutor {
  if (!defaultExecutor) {
    defaultExecutor = new ScriptExecutor();
  }
  return defaultExecutor;
}

/** Resets the default executor (useful for testing). */
export function resetDefaultScriptExecutor(): void {
  defaultExecutor = null;
}
