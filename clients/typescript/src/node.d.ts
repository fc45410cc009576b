// The few Node.js APIs this package uses, declared here because the
// package has no dependencies (not even @types/node) and Debian ships
// none. Only what the sources call is declared.

declare const process: {
  env: Record<string, string | undefined>;
};

declare module 'node:http' {
  export interface IncomingMessage extends AsyncIterable<Uint8Array> {
    statusCode?: number;
    headers: Record<string, string | string[] | undefined>;
    destroy(error?: Error): void;
  }
  export interface ClientRequest {
    on(event: 'response', cb: (res: IncomingMessage) => void): ClientRequest;
    on(event: 'error', cb: (err: Error) => void): ClientRequest;
    write(chunk: Uint8Array | string): boolean;
    end(): void;
    destroy(error?: Error): void;
  }
  export function request(options: {
    socketPath: string;
    path: string;
    method: string;
    headers: Record<string, string>;
    signal?: AbortSignal;
  }): ClientRequest;
}

declare module 'node:child_process' {
  interface Readable {
    on(event: 'data', cb: (chunk: Uint8Array) => void): void;
  }
  interface Writable {
    on(event: 'error', cb: (err: Error) => void): void;
    end(chunk?: Uint8Array | string): void;
  }
  export interface ChildProcess {
    stdin: Writable | null;
    stdout: Readable | null;
    stderr: Readable | null;
    on(event: 'close', cb: (code: number | null, signal: string | null) => void): void;
    on(event: 'error', cb: (err: Error & { code?: string }) => void): void;
    kill(signal?: string): boolean;
  }
  export function spawn(
    command: string,
    args: string[],
    options: { stdio: ['pipe', 'pipe', 'pipe']; env?: Record<string, string | undefined>; signal?: AbortSignal },
  ): ChildProcess;
}

declare module 'node:fs' {
  export function existsSync(path: string): boolean;
}

declare module 'node:fs/promises' {
  export function mkdtemp(prefix: string): Promise<string>;
  export function writeFile(path: string, data: string, options: { mode: number }): Promise<void>;
  export function chmod(path: string, mode: number): Promise<void>;
  export function rm(path: string, options: { recursive: boolean; force: boolean }): Promise<void>;
}

declare module 'node:os' {
  export function tmpdir(): string;
}

declare module 'node:path' {
  export function join(...parts: string[]): string;
  export function resolve(...parts: string[]): string;
  export function relative(from: string, to: string): string;
  export function basename(path: string): string;
  export function extname(path: string): string;
  export function isAbsolute(path: string): boolean;
  export const sep: string;
}
