// Typed errors: callers branch on the class (instanceof), never on the text.
import type { ErrorBody, Explanation, Result } from './types.js';

/** The base of every error this package throws. */
export class SandboxrunError extends Error {
  /** the HTTP status, when a server answered */
  readonly status?: number;
  /** the server's error body, as sent */
  readonly body: ErrorBody;
  /** what is known of a run whose sandbox failed after it started */
  readonly result?: Result;

  constructor(message: string, opts: { status?: number; body?: ErrorBody; result?: Result } = {}) {
    super(message);
    this.name = new.target.name;
    this.status = opts.status;
    this.body = opts.body ?? { error: message };
    this.result = opts.result ?? opts.body?.result;
  }
}

/** The server could not be reached, or answered something that is not the API. */
export class TransportError extends SandboxrunError {}

/** The call needs a server: the local CLI mode has no such operation. */
export class LocalModeError extends SandboxrunError {}

/** 400: the request was malformed; the message says which part and why. */
export class BadRequestError extends SandboxrunError {}

/**
 * An id, a name or a file path refused before anything was sent: empty,
 * "." or "..", or (an id or a name) holding a "/" or a "\", which a server's
 * router would resolve to another resource (snapshots/.. is the session
 * itself). No server answered, so status is undefined.
 */
export class BadParamError extends BadRequestError {}

/**
 * 3xx: the server answered a redirect, which the client does not follow for
 * a request other than GET or HEAD (the API answers none; following one
 * with the same method could act on another resource). location is where
 * it pointed, when the answer said.
 */
export class RedirectError extends SandboxrunError {
  readonly location?: string;
  constructor(message: string, opts: { status?: number; body?: ErrorBody; location?: string } = {}) {
    super(message, opts);
    this.location = opts.location;
  }
}

/** 401: the bearer token is missing or unknown (set SANDBOXRUN_TOKEN). */
export class AuthError extends SandboxrunError {}

/**
 * 403: refused by policy before anything ran. For a denied command, part is
 * the denied part, reason why, and suggest the allowed-tools entry that
 * would allow it; from explain, explanation is what was decided before.
 */
export class RefusedError extends SandboxrunError {
  get part(): string {
    return this.body.part ?? '';
  }
  get reason(): string {
    return this.body.reason ?? '';
  }
  get suggest(): string {
    return this.body.suggest ?? '';
  }
  /** on a refused explain: what was decided before the refusal */
  get explanation(): Explanation | undefined {
    return this.body.explanation;
  }
}

/** 404: no such skill, session or file. */
export class NotFoundError extends SandboxrunError {}

/**
 * A list that may lack items: the replicas in `unreachable` did not answer
 * (none named: the server was started without --replicas). The items that
 * came are in `items`.
 */
export class PartialListError<T = unknown> extends SandboxrunError {
  readonly items: T[];
  readonly unreachable: string[];

  constructor(message: string, items: T[], unreachable: string[]) {
    super(message, { status: 200 });
    this.items = items;
    this.unreachable = unreachable;
  }
}

/** 409: a folder or a link is where a file is needed. */
export class ConflictError extends SandboxrunError {}

/** 408: the request's body did not arrive in time; nothing ran or was kept, so send it again. */
export class RequestTimeoutError extends SandboxrunError {}

/** 413: a limit on bytes or files; the message names it and how to raise it. */
export class TooLargeError extends SandboxrunError {}

/** 415: a bulk upload that is not a tar. */
export class UnsupportedMediaError extends SandboxrunError {}

/** 429: every slot is taken, the token holds its most sessions, or it reached a quota (the message names it); retry after retryAfter seconds. */
export class BusyError extends SandboxrunError {
  readonly retryAfter: number;
  constructor(message: string, opts: { status?: number; body?: ErrorBody; retryAfter?: number } = {}) {
    super(message, opts);
    this.retryAfter = opts.retryAfter ?? 1;
  }
}

/** 5xx: the server or the sandbox failed; the message is the server's reason. */
export class ServerError extends SandboxrunError {
  get reason(): string {
    return this.message;
  }
}

/** 503 (or the CLI's exit status 3): the engine is unreachable, an image is missing, or the backend cannot prove a run without network is isolated (the operator's setup; no Retry-After). */
export class UnavailableError extends ServerError {}

const BY_STATUS: Record<number, typeof SandboxrunError> = {
  400: BadRequestError,
  401: AuthError,
  403: RefusedError,
  404: NotFoundError,
  408: RequestTimeoutError,
  409: ConflictError,
  413: TooLargeError,
  415: UnsupportedMediaError,
  503: UnavailableError,
};

/** The error for an answer with this status and body. */
export function errorForStatus(status: number, body: ErrorBody, retryAfter?: number): SandboxrunError {
  const message = body.error || `the server answered ${status}`;
  if (status === 429) {
    return new BusyError(message, { status, body, retryAfter });
  }
  const Cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : SandboxrunError);
  return new Cls(message, { status, body });
}
