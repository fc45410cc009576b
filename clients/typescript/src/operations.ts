// Every endpoint of the HTTP API by the spec's operationId: the client
// builds each request from this table, and a test holds it against
// server/openapi.json.
import { BadRequestError } from './errors.js';

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
});

/**
 * Fills an operation's path. Each value is escaped as one path segment; a
 * file path keeps its slashes (the server refuses percent-encoded ones).
 */
export function pathOf(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/\{(\w+)\}/g, (_, key: string) => {
    const value = params[key];
    if (value === undefined || value === '') {
      throw new TypeError(`sandboxrun: ${key} is required`);
    }
    const segs = key === 'path' ? value.split('/') : [value];
    // fetch would resolve "." and ".." before sending, turning a bad path
    // into another URL; the server's 400 is what the caller should see.
    if (segs.some((s) => s === '.' || s === '..' || s === '')) {
      throw new BadRequestError(`path ${JSON.stringify(value)}: empty, "." and ".." elements are refused; name the file relative to the workspace, e.g. out/report.csv`, { status: 400 });
    }
    return segs.map(encodeURIComponent).join('/');
  });
}
