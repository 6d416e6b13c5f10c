// The job object a sandboxed processor receives: a snapshot of the job's fields (id, name,
// data, opts, attempts, progress…) plus the Job methods of messages.mjs JOB_METHODS, each
// forwarded to the parent's Job over IPC and resolved with the parent's answer. Plain
// JavaScript: it runs in the child, which has no loader (see messages.mjs).
import { JOB_METHODS } from './messages.mjs';

/**
 * A job proxy for one attempt. `call(method, args)` sends a CALL and resolves with the REPLY
 * (child-main.mjs matches them by request id).
 */
export function jobProxy(snapshot, call) {
  const job = { ...snapshot };
  const methods = {};
  for (const method of Object.keys(JOB_METHODS)) methods[method] = (...args) => call(method, args);
  // Local copies follow the updates, as on a Job in the parent.
  methods.updateProgress = async (progress) => {
    await call('updateProgress', [progress]);
    job.progress = progress;
  };
  methods.updateData = async (data) => {
    await call('updateData', [data]);
    job.data = data;
  };
  // JSON.stringify(job) shows the fields, like a Job's toJSON.
  methods.toJSON = () => ({ ...job });
  // Not enumerable: spreading or logging the job shows its fields only.
  for (const [k, value] of Object.entries(methods)) Object.defineProperty(job, k, { value, enumerable: false, writable: true, configurable: true });
  return job;
}

