// sandboxrun: a client of the sandboxrun HTTP API (or the local CLI), and a
// sandboxed drop-in for the ScriptExecutor interface.
export { Client, Session, type ClientOptions } from './client.js';
export type { Decision } from './local.js';
export { OPERATIONS, type Operation } from './operations.js';
export * from './errors.js';
export * from './types.js';
export {
  ScriptExecutor,
  createScriptExecutor,
  getDefaultScriptExecutor,
  resetDefaultScriptExecutor,
} from './executor.js';
export type {
  JSONSchemaDefinition,
  JSONSchemaProperty,
  LoadedScriptTool,
  ScriptExecutionRequest,
  ScriptExecutionResult,
  ScriptExecutorConfig,
  ScriptInputValidationResult,
} from './executor.js';
