/**
 * Input validation for every public entry. Each check throws a ValidationError naming the
 * field, the expected form and the value it got, before anything is written to Redis.
 */
import { ValidationError } from './errors.js';
import { ACTIVE_SENTINEL } from './layout.js';

/** Highest priority number: priority × 2^32 must stay exact in a double (2^21 − 1). */
export const MAX_PRIORITY = 2_097_151;
/** Longest lane name, queue name or job id, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024;

/** A short, safe rendering of any value for error messages. */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} chars)` : JSON.stringify(value);
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n (a BigInt)`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    case 'undefined':
      return 'undefined';
    case 'boolean':
      return String(value);
    default:
      if (value === null) return 'null';
      if (Array.isArray(value)) return `an array of ${value.length}`;
      return 'an object';
  }
}

export function fail(field: string, expected: string, value: unknown): never {
  throw new ValidationError(field, expected, describe(value));
}

/**
 * A ValidationError where BullMQ throws too: the message begins with BullMQ's text (which
 * programs match), then echomq's detail.
 */
export function bullError(bullText: string, field: string, expected: string, got: string): ValidationError {
  const e = new ValidationError(field, expected, got);
  e.message = `${bullText}: ${e.message}`;
  return e;
}

export function failAs(bullText: string, field: string, expected: string, value: unknown): never {
  throw bullError(bullText, field, expected, describe(value));
}

export function integerIn(field: string, value: unknown, min: number, max: number, expected?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}…${max}`;
    fail(field, expected ?? `an integer ${range}`, value);
  }
  return value;
}

/** BullMQ refuses a float priority and one above the limit with these texts. */
export function priority(value: unknown, field = 'priority'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_PRIORITY) {
    const bull = typeof value === 'number' && Number.isFinite(value) && Math.trunc(value) !== value
      ? 'Priority should not be float'
      : `Priority should be between 0 and ${MAX_PRIORITY}`;
    failAs(bull, field, `an integer 0…${MAX_PRIORITY}`, value);
  }
  return value;
}

export const nonNegativeInt = (field: string, value: unknown): number =>
  integerIn(field, value, 0, Number.MAX_SAFE_INTEGER, 'a non-negative integer');

export const positiveInt = (field: string, value: unknown): number =>
  integerIn(field, value, 1, Number.MAX_SAFE_INTEGER, 'a positive integer');

/**
 * A lone UTF-16 surrogate cannot be encoded as UTF-8: Redis would store U+FFFD instead, so the
 * string would not round-trip and two different names could meet in one key.
 */
const LONE_SURROGATE = /\p{Cs}/u;

export function nonEmptyString(field: string, value: unknown, maxLen = MAX_NAME_LENGTH): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLen) {
    fail(field, `a non-empty string of at most ${maxLen} characters`, value);
  }
  if (LONE_SURROGATE.test(value)) fail(field, 'a well-formed Unicode string (no lone surrogates)', value);
  return value;
}

export function string(field: string, value: unknown, maxLen = MAX_NAME_LENGTH): string {
  if (typeof value !== 'string' || value.length > maxLen) {
    fail(field, `a string of at most ${maxLen} characters`, value);
  }
  if (LONE_SURROGATE.test(value)) fail(field, 'a well-formed Unicode string (no lone surrogates)', value);
  return value;
}

export function boolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') fail(field, 'a boolean', value);
  return value;
}

export function plainObject(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(field, 'an object', value);
  return value as Record<string, unknown>;
}

/**
 * Custom job ids may not be integers (BullMQ's test: the id is what parseInt prints back), which
 * are reserved for generated ids; '0' and ids starting '0:' are refused as BullMQ does. Any
 * other character is allowed (':' too, a deliberate difference: docs/migrating-from-bullmq.md).
 */
export function jobId(value: unknown, field = 'jobId'): string {
  const id = nonEmptyString(field, value);
  if (id === '0' || id.startsWith('0:')) {
    failAs("JobId cannot be '0' or start with '0:'", field, "a string other than '0' and not starting with '0:'", value);
  }
  if (`${parseInt(id, 10)}` === id) {
    failAs('Custom Id cannot be integers', field, 'a non-empty string that is not an integer (integers are generated ids)', value);
  }
  // The active set's sentinel member: a job of that id would take over its place.
  if (id === ACTIVE_SENTINEL) fail(field, 'not the active set\'s sentinel (72 "~")', value);
  return id;
}

/** An id of an existing job: generated (integer) or custom. */
export const existingJobId = (value: unknown, field = 'jobId'): string => nonEmptyString(field, value);

export const laneName = (value: unknown, field = 'lane'): string => nonEmptyString(field, value);

/** A queue name; a missing or empty one fails with BullMQ's text. */
export function queueName(value: unknown, field = 'queue name'): string {
  if (value === undefined || value === null || value === '') {
    failAs('Queue name must be provided', field, `a non-empty string of at most ${MAX_NAME_LENGTH} characters`, value);
  }
  return nonEmptyString(field, value);
}

/**
 * Encodes job data or a return value as JSON, refusing what would not survive the round trip:
 * undefined at the top, functions, symbols, BigInt, cycles, and payloads over maxBytes.
 */
/** A plain object whose own values are all strings, numbers, booleans, null or undefined. */
function isFlatPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  // for-in makes no key array; it also visits inherited enumerable keys, which only makes the
  // check stricter (such a value takes the walk, whose result is the same).
  for (const k in value) {
    const x = (value as Record<string, unknown>)[k];
    const t = typeof x;
    if (t !== 'string' && t !== 'number' && t !== 'boolean' && x !== null && x !== undefined) return false;
  }
  return true;
}

export function encodeJson(field: string, value: unknown, maxBytes: number): string {
  if (value === undefined) fail(field, 'a JSON-serialisable value', value);
  // null, booleans, finite numbers and short strings need no walk (the common return values).
  if (value === null) return 'null';
  const t = typeof value;
  if (t === 'boolean' || (t === 'number' && Number.isFinite(value)) || (t === 'string' && (value as string).length * 3 <= maxBytes - 2)) {
    return JSON.stringify(value);
  }
  let json: string | undefined;
  try {
    // A plain object of scalars (the common job data) cannot hold what the walk refuses.
    json = t === 'object' && isFlatPlain(value as object) ? JSON.stringify(value) : JSON.stringify(value, (key, v) => {
      const t = typeof v;
      if (t === 'function' || t === 'symbol' || t === 'bigint') {
        const where = key === '' ? field : `${field}.${key}`;
        fail(where, 'a JSON-serialisable value', v);
      }
      return v;
    });
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    // JSON.stringify throws TypeError on cycles.
    fail(field, 'a JSON-serialisable value without cycles', value);
  }
  if (json === undefined) fail(field, 'a JSON-serialisable value', value);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only a string that could be over is measured.
  if (json.length * 3 > maxBytes && Buffer.byteLength(json) > maxBytes) {
    // Not through fail(): the size is a measurement, not a user string to be quoted.
    throw new ValidationError(field, `at most ${maxBytes} bytes of JSON`, `${Buffer.byteLength(json)} bytes`);
  }
  return json;
}

/**
 * Key prefix, as BullMQ takes it: any non-empty string, braces included. A prefix with its own
 * hash tag (`'{bull}'`, `'{bull}:custom'`) puts every queue of that prefix in one slot; any
 * prefix keeps all keys of one queue in one slot (keys.ts: the first `{…}` of every key of the
 * queue is the same text).
 */
export function prefix(value: unknown): string {
  return nonEmptyString('prefix', value, 256);
}

/**
 * The same refusal under a longer field name (an option of job 3 of a bulk: `jobs[3].opts.x`),
 * keeping the BullMQ text the message may begin with.
 */
export function renamed(e: ValidationError, field: string): ValidationError {
  const own = `${e.field} must be ${e.expected}, got ${e.got}`;
  const lead = e.message.endsWith(own) ? e.message.slice(0, e.message.length - own.length) : '';
  const out = new ValidationError(field, e.expected, e.got);
  if (lead) out.message = lead + out.message;
  return out;
}
