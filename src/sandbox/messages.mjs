// The message protocol between a Worker and its sandboxed processors (child processes or worker
// threads). Plain JavaScript on purpose: the child entry (child-main.mjs) runs under plain Node
// with no loader, from src/ in tests as from dist/ after the build, and imports this one file;
// the parent's TypeScript imports it too (types in messages.d.mts), so the protocol is defined
// once.
//
// Every message is a small object whose `t` is one of the tags below. Per job there is exactly
// one round trip: START out, DONE or FAILED back. CALL/REPLY pairs only happen when the
// processor calls a job method.

/** Parent → child. */
export const ToChild = Object.freeze({
  /** { t, file }: load the processor file; answered by READY or LOAD_FAILED. */
  INIT: 1,
  /** { t, job, token }: run one job (the child runs one at a time). */
  START: 2,
  /** { t, reason } or { t, error }: abort the running job's AbortSignal with that reason. */
  CANCEL: 3,
  /** { t, rid, ok, value | error }: the answer to a CALL. */
  REPLY: 4,
  /** { t }: exit once idle. */
  STOP: 5,
});

/** Child → parent. */
export const ToParent = Object.freeze({
  /** { t }: the processor file loaded; the child takes jobs. */
  READY: 11,
  /** { t, error }: the processor file failed to load; the child exits. */
  LOAD_FAILED: 12,
  /** { t, value }: the job's processor returned `value`. */
  DONE: 13,
  /** { t, error, fatal? }: the processor threw; fatal: an uncaught error, the child exits. */
  FAILED: 14,
  /** { t, rid, method, args }: call `job[method](...args)` in the parent. */
  CALL: 15,
});

/**
 * The Job methods a sandboxed processor may call, forwarded to the parent's Job. The value is
 * the index of the method's `token` argument, which the parent replaces with its own token of
 * the attempt (-1: the method takes none).
 */
export const JOB_METHODS = Object.freeze({
  updateProgress: -1,
  log: -1,
  updateData: -1,
  getChildrenValues: -1,
  getIgnoredChildrenFailures: -1,
  getDependencies: -1,
  getDependenciesCount: -1,
  moveToDelayed: 1,
  moveToWait: 0,
  moveToWaitingChildren: 0,
});

/** An error as it crosses the boundary: message, name and stack intact, plus JSON-safe own fields (code…). */
export function errorToWire(err) {
  if (!(err instanceof Error) && !(err && typeof err === 'object' && typeof err.message === 'string')) {
    const text = typeof err === 'string' ? err : `non-error thrown: ${safeString(err)}`;
    return { message: text, name: 'Error', stack: undefined, props: undefined };
  }
  let props;
  for (const key of Object.keys(err)) {
    if (key === 'message' || key === 'name' || key === 'stack') continue;
    const v = err[key];
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') (props ??= {})[key] = v;
  }
  return { message: String(err.message), name: String(err.name ?? 'Error'), stack: typeof err.stack === 'string' ? err.stack : undefined, props };
}

function safeString(v) {
  try {
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}
