// Every endpoint of the HTTP API by the spec's operationId: the client
// builds each request from this table, and a test holds it against
// server/openapi.json.
import { BadParamError } from './errors.js';

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
}

export const OPERATIONS: Readonly<Record<string, Operation>> = Object.freeze({
  healthz: { method: 'GET', path: '/healthz' },
  readyz: { method: 'GET', path: '/readyz' },
  metrics: { method: 'GET', path: '/metrics' },
  openapi: { method: 'GET', path: '/v1/openapi.json' },
  listSkills: { method: 'GET', path: '/v1/skills' },
  uploadSkill: { method: 'POST', path: '/v1/skills' },
  listSkillVersions: { method: 'GET', path: '/v1/skills/{name}/versions' },
  deleteSkill: { method: 'DELETE', path: '/v1/skills/{name}' },
  deleteSkillVersion: { method: 'DELETE', path: '/v1/skills/{name}/versions/{version}' },
  activateSkill: { method: 'GET', path: '/v1/skills/{name}' },
  run: { method: 'POST', path: '/v1/skills/{name}/run' },
  exec: { method: 'POST', path: '/v1/skills/{name}/exec' },
  python: { method: 'POST', path: '/v1/skills/{name}/python' },
  explain: { method: 'POST', path: '/v1/skills/{name}/explain' },
  createSession: { method: 'POST', path: '/v1/sessions' },
  listSessions: { method: 'GET', path: '/v1/sessions' },
  getSession: { method: 'GET', path: '/v1/sessions/{id}' },
  deleteSession: { method: 'DELETE', path: '/v1/sessions/{id}' },
  createSnapshot: { method: 'POST', path: '/v1/sessions/{id}/snapshots' },
  listSnapshots: { method: 'GET', path: '/v1/sessions/{id}/snapshots' },
  deleteSnapshot: { method: 'DELETE', path: '/v1/sessions/{id}/snapshots/{snap}' },
  restoreSnapshot: { method: 'POST', path: '/v1/sessions/{id}/restore' },
  listFiles: { method: 'GET', path: '/v1/sessions/{id}/files' },
  putTar: { method: 'PUT', path: '/v1/sessions/{id}/files' },
  putFile: { method: 'PUT', path: '/v1/sessions/{id}/files/{path}' },
  getFile: { method: 'GET', path: '/v1/sessions/{id}/files/{path}' },
  deleteFile: { method: 'DELETE', path: '/v1/sessions/{id}/files/{path}' },
  getUsage: { method: 'GET', path: '/v1/usage' },
});

/**
 * Fills an operation's path. Each value is escaped as one path segment; a
 * file path keeps its slashes (the server refuses percent-encoded ones).
 * A value a router would resolve to another resource is a BadParamError
 * before anything is sent: fetch itself resolves "." and "..", so
 * deleteSnapshot(id, "..") would otherwise name the session.
 */
export function pathOf(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/\{(\w+)\}/g, (_, key: string) => {
    const value = params[key];
    if (typeof value !== 'string' || value === '') {
      throw new BadParamError(`sandboxrun: ${key} is required`);
    }
    if (key !== 'path' && /[/\\]/.test(value)) {
      throw new BadParamError(`${key} ${JSON.stringify(value)}: ids and names hold no "/" or "\\"; pass the id or the name alone`);
    }
    const segs = key === 'path' ? value.split('/') : [value];
    if (segs.some((s) => s === '.' || s === '..' || s === '')) {
      throw new BadParamError(
        key === 'path'
          ? `path ${JSON.stringify(value)}: empty, "." and ".." elements are refused; name the file relative to the workspace, e.g. out/report.csv`
          : `${key} ${JSON.stringify(value)}: ids and names are never "." or "..", which a server would resolve to another resource (the parent)`,
      );
    }
    return segs.map(encodeURIComponent).join('/');
  });
}
