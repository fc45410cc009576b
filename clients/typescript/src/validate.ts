// Input validation of the drop-in ScriptExecutor, as the seed documents
// it: required fields and basic JSON Schema types, without a schema library.

export interface JSONSchemaProperty {
  type?: string | string[];
  description?: string;
  [key: string]: unknown;
}

export interface JSONSchemaDefinition {
  type?: string;
  properties?: Record<string, JSONSchemaProperty>;
  required?: string[];
  [key: string]: unknown;
}

export interface ScriptInputValidationResult {
  valid: boolean;
  errors: string[];
  normalizedInputs?: Record<string, unknown>;
}

/**
 * Validates inputs against the tool's JSON Schema: required fields, and
 * the type of each field the schema types (null passes). JSON strings
 * given for array or object fields are parsed first; an empty string for
 * an optional one is dropped.
 */
export function validateInputs(inputs: Record<string, unknown>, schema: JSONSchemaDefinition): ScriptInputValidationResult {
  const errors: string[] = [];
  const normalizedInputs = normalizeJsonStringInputs(inputs, schema);
  if (!schema.properties || Object.keys(schema.properties).length === 0) {
    return { valid: true, errors: [], normalizedInputs };
  }
  for (const field of schema.required ?? []) {
    if (!(field in normalizedInputs) || normalizedInputs[field] === undefined) {
      errors.push(`Missing required field: ${field}`);
    }
  }
  for (const [key, value] of Object.entries(normalizedInputs)) {
    const propSchema = schema.properties[key];
    if (!propSchema?.type) continue;
    const actualType = getJsonType(value);
    const expectedTypes = Array.isArray(propSchema.type) ? propSchema.type : [propSchema.type];
    const ok = expectedTypes.includes(actualType) || (actualType === 'integer' && expectedTypes.includes('number'));
    if (!ok && actualType !== 'null') {
      errors.push(`Field '${key}': expected ${expectedTypes.join(' | ')}, got ${actualType}`);
    }
  }
  const result: ScriptInputValidationResult = { valid: errors.length === 0, errors };
  if (errors.length === 0) {
    result.normalizedInputs = normalizedInputs;
  }
  return result;
}

function getJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return t;
}

function normalizeJsonStringInputs(inputs: Record<string, unknown>, schema: JSONSchemaDefinition): Record<string, unknown> {
  const normalized: Record<string, unknown> = { ...inputs };
  if (!schema.properties) {
    return normalized;
  }
  const required = new Set(schema.required ?? []);
  for (const [key, value] of Object.entries(normalized)) {
    if (typeof value !== 'string') continue;
    const propSchema = schema.properties[key];
    if (!propSchema?.type) continue;
    const expectedTypes = Array.isArray(propSchema.type) ? propSchema.type : [propSchema.type];
    if (!expectedTypes.includes('array') && !expectedTypes.includes('object')) continue;
    const trimmed = value.trim();
    if (trimmed === '' && !required.has(key)) {
      delete normalized[key];
      continue;
    }
    if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
      try {
        normalized[key] = JSON.parse(trimmed);
      } catch {
        // left as a string: the type check reports it
      }
    }
  }
  return normalized;
}

