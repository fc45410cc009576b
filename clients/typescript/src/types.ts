// The API's documents, with the field names of server/openapi.json (a test
// holds every interface here against the spec's schemas).

/** The limits one execution ran under. */
export interface Limits {
  timeout_s: number;
  memory_bytes: number;
  cpus: number;
  pids: number;
  output_bytes: number;
  tmp_bytes?: number;
  workspace_write_bytes?: number;
  network: boolean;
  egress?: unknown;
  sources?: Record<string, string>;
  clamped?: string[];
}

/** A file a run created, modified or deleted in its session's workspace. */
export interface FileChange {
  path: string;
  change: 'created' | 'modified' | 'deleted';
  size: number;
  sha256?: string;
}

/**
 * The outcome of one execution. A script that exits non-zero, times out or
 * is killed is a Result (success false), not an exception.
 */
export interface Result {
  id: string;
  skill: string;
  /** sha256:<hex> of the skill's content as it ran */
  skill_digest?: string;
  /** 'hit': an earlier run's Result (id is that run's); 'miss': kept for later runs */
  cache?: 'hit' | 'miss';
  command: string[];
  /** the script's exit status; 124 on timeout; -N when killed by signal N; -1 when it never ran */
  exit_code: number;
  success: boolean;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
  /** stdout parsed as JSON when all of it is one JSON value, else null */
  output: unknown;
  timed_out: boolean;
  oom_killed: boolean;
  signal: string;
  duration_ms: number;
  error?: string;
  limits: Limits;
  image: string;
  image_id?: string;
  runtime: string;
  cpu_time_ms?: number;
  peak_rss_kb?: number;
  /** the largest values of the run's live usage samples; absent when none was taken */
  peak_cpu_percent?: number;
  peak_memory_bytes?: number;
  peak_pids?: number;
  workspace_full?: boolean;
  workspace_used_bytes?: number;
  /** what the run changed in its session's workspace; absent without a session */
  files?: FileChange[];
  egress?: unknown;
}

/** What run, exec and python share; absent fields take the skill's and the policy's values. */
export interface RunOptions {
  /** a JSON object delivered on the script's stdin */
  args?: Record<string, unknown>;
  /** command-line arguments (run and python), never seen by a shell */
  argv?: string[];
  /** extra environment; reserved and code-loading names are refused */
  env?: Record<string, string>;
  /** seconds, or a duration such as "10s"; held to the policy's ceiling */
  timeout?: number | string;
  memory_mib?: number;
  cpus?: number;
  /** a session's id: its folder is the run's /workspace (server only) */
  session?: string;
  /** local mode: start in "workspace" (default) or "skill" (the skill's folder, read-only) */
  cwd?: 'workspace' | 'skill';
  /** local mode: the host folder mounted at /workspace (default: a fresh empty folder) */
  workspace?: string;
  /**
   * how often the sandbox's resource use is sampled, in ms: absent is every
   * 2000 on a stream and never otherwise, 0 is never; the server raises a
   * shorter interval to its floor. The Result keeps the peaks. Server only.
   */
  usage_every_ms?: number;
  /** streams: receives each usage sample, in order, while the script runs */
  onUsage?: (usage: LiveUsage) => void;
  /** cancels the call; on a server, disconnecting cancels the run */
  signal?: AbortSignal;
}

/** The body of POST /v1/skills/{name}/run. */
export interface RunRequest {
  script: string;
  args?: Record<string, unknown>;
  env?: Record<string, string>;
  timeout?: number | string;
  memory_mib?: number;
  cpus?: number;
  argv?: string[];
  session?: string;
  usage_every_ms?: number;
}

/**
 * The body of POST /v1/skills/{name}/explain: exactly one of script,
 * command and code says which run is explained.
 */
export interface ExplainRequest {
  script?: string;
  command?: string;
  code?: string;
  args?: Record<string, unknown>;
  env?: Record<string, string>;
  timeout?: number | string;
  memory_mib?: number;
  cpus?: number;
  argv?: string[];
  session?: string;
  /** aborts the request */
  signal?: AbortSignal;
}

/**
 * What a run would be, decided as the run decides it, without running it.
 * Folders are the sandbox's (/workspace), never the server host's.
 */
export interface Explanation {
  skill: string;
  action: 'script' | 'command' | 'python';
  argv?: string[];
  command?: string;
  limits: Limits;
  image?: string;
  skill_image: boolean;
  runner: string;
  workspace?: string;
  session?: string;
  workspace_writable: boolean;
  write_granted: boolean;
  writable: boolean;
  allowed_tools: string[];
  policy_digest: string;
  /** whether the limits were held against the engine's host, as the run holds them */
  host?: HostCheck;
}

/** Whether an explanation asked the engine's host (CPUs, memory, runtime); reason says why not. */
export interface HostCheck {
  checked: boolean;
  reason?: string;
}

/** The body of POST /v1/skills/{name}/exec. */
export interface ExecRequest {
  command: string;
  args?: Record<string, unknown>;
  env?: Record<string, string>;
  timeout?: number | string;
  memory_mib?: number;
  cpus?: number;
  session?: string;
  usage_every_ms?: number;
}

/** The body of POST /v1/skills/{name}/python. */
export interface PythonRequest {
  code: string;
  args?: Record<string, unknown>;
  env?: Record<string, string>;
  timeout?: number | string;
  memory_mib?: number;
  cpus?: number;
  argv?: string[];
  session?: string;
  usage_every_ms?: number;
}

export interface SkillSummary {
  name: string;
  description: string;
  /** when to use the skill: show it to a model next to the description */
  when_to_use?: string;
  /** true: run it when named, never show it to a model */
  disable_model_invocation?: boolean;
  version?: string;
  /** sha256:<hex> of what the bare name runs (a server's list; absent in local mode) */
  digest?: string;
  source: 'operator' | 'uploaded';
  /** an uploaded skill's versions, oldest first */
  versions?: SkillVersion[];
}

/** One stored version of an uploaded skill. */
export interface SkillVersion {
  name: string;
  version: string;
  digest: string;
  files: number;
  bytes: number;
  created_at: string;
  seq: number;
}

/** What POST /v1/skills answers: the version stored (or already stored). */
export interface SkillUpload {
  name: string;
  version: string;
  digest: string;
  files: number;
  bytes: number;
  created_at: string;
  seq: number;
  /** validate's warnings */
  warnings: string[];
}

/** One uploaded skill's versions. */
export interface SkillVersions {
  name: string;
  versions: SkillVersion[];
}

/** A 422 to an upload: validate's findings. */
export interface SkillInvalid {
  error: string;
  errors: string[];
  warnings: string[];
}

export interface AllowedTool {
  name: string;
  spec?: string;
}

/** What an agent receives when it activates a skill. */
export interface Activation {
  name: string;
  description: string;
  base_dir: string;
  body: string;
  scripts: string[];
  references: string[];
  assets: string[];
  allowed_tools: AllowedTool[];
}

export interface Status {
  status: string;
}

/** A workspace the server keeps across calls (the spec's Session). */
export interface SessionInfo {
  id: string;
  created_at: string;
  expires_at: string;
  bytes_used: number;
  bytes_limit: number;
}

/** A session's files at a moment (files only). */
export interface Snapshot {
  id: string;
  session: string;
  label?: string;
  created_at: string;
  bytes: number;
  files: number;
}

export interface StoredFile {
  path: string;
  size: number;
  sha256: string;
}

/** One entry of a session's file list; a symlink is shown with its target, never followed. */
export interface FileEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink';
  size: number;
  sha256?: string;
  target?: string;
  modified: string;
}

/** Every error answer's body (the spec's Error). */
export interface ErrorBody {
  error: string;
  part?: string;
  reason?: string;
  suggest?: string;
  result?: Result;
  /** on a refused explain: what was decided before the refusal */
  explanation?: Explanation;
}

/** One item of a stream as the server sends it. */
export interface Event {
  type: 'stdout' | 'stderr' | 'usage' | 'result' | 'error';
  data?: string;
  usage?: LiveUsage;
  result?: Result;
  error?: ErrorBody;
}

/**
 * One sample of a running sandbox's resource use (a usage event), on
 * docker, oci and kubernetes.
 */
export interface LiveUsage {
  /** since the job reached the sandbox */
  elapsed_ms: number;
  /** CPU used over the last interval, as a share of one core (200 = two cores busy) */
  cpu_percent: number;
  /** memory the sandbox holds now */
  memory_bytes: number;
  /** processes and threads */
  pids: number;
  /**
   * what the run has written to its writable workspace so far (the bytes on its copy-on-write
   * view's write layer, in whole pages); absent where not measured (no writable workspace, or one copied in)
   */
  workspace_bytes?: number;
}

/** A chunk of output, as a stream yields it before the Result. */
export interface OutputEvent {
  type: 'stdout' | 'stderr';
  data: string;
}

/** What a token used: runs, CPU (the sum of its Results' cpu_time_ms), memory limit × wall time, egress bytes. */
export interface UsageFigures {
  runs: number;
  cpu_time_ms: number;
  memory_mib_ms: number;
  memory_gib_seconds: number;
  egress_bytes: number;
}

/** A window's quota; an absent figure is unbounded. */
export interface UsageLimits {
  runs?: number;
  cpu_seconds?: number;
  memory_gib_seconds?: number;
  egress_bytes?: number;
}

/** A token's use in the current window of one length; `end` is when the next begins. */
export interface UsageWindow {
  window: string;
  window_seconds: number;
  start: string;
  end: string;
  used: UsageFigures;
  limits?: UsageLimits;
}

/**
 * What a token keeps on the server now (a level, not a window's sum), and its stored_bytes quota.
 * At or past `limit` a new session, file, snapshot, upload or run into a session is refused with
 * 429 and no retryAfter: deleting frees room, waiting does not.
 */
export interface UsageStored {
  session_bytes: number;
  upload_bytes: number;
  bytes: number;
  limit?: number;
}

/** A token's use by its label (never the token): per window and in all, and what it stores now. */
export interface Usage {
  label: string;
  windows: UsageWindow[];
  total: UsageFigures;
  stored?: UsageStored;
}
