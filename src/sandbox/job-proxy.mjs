// The job object a sandboxed processor receives: a snapshot of the job's fields (id, name,
// data, opts, attempts, progress…) plus the Job methods of messages.mjs JOB_METHODS, each
// forwarded to the parent's Job over IPC and resolved with the parent's answer. Plain
// JavaScript: it runs in the child, which has no loader (see messages.mjs).
import { JOB_METHODS } from './messages.mjs';

/** The forwarder of an attempt: `call(method, args)` sends a CALL and resolves with its REPLY. */
const CALL = Symbol('call');

/** Fields are own properties (spreading or logging the job shows them); methods sit on the prototype. */
class SandboxedJob {
  constructor(snapshot, call) {
    Object.assign(this, snapshot);
    Object.defineProperty(this, CALL, { value: call });
  }

  // Local copies follow the updates, as on a Job in the parent.
  async updateProgress(progress) {
    await this[CALL]('updateProgress', [progress]);
    this.progress = progress;
  }

  async updateData(data) {
    await this[CALL]('updateData', [data]);
    this.data = data;
  }

  toJSON() {
    return { ...this };
  }
}

for (const method of Object.keys(JOB_METHODS)) {
  if (Object.hasOwn(SandboxedJob.prototype, method)) continue;
  Object.defineProperty(SandboxedJob.prototype, method, {
    value: function (...args) {
      return this[CALL](method, args);
    },
    writable: true,
    configurable: true,
  });
}

/** A job proxy for one attempt. */
export function jobProxy(snapshot, call) {
  return new SandboxedJob(snapshot, call);
}
