// Entry of a sandboxed processor's child process (child_process.fork) or worker thread: loads
// the processor file once (INIT), then runs one job at a time (START → DONE | FAILED), with the
// job's methods forwarded to the parent (job-proxy.mjs) and cancellation arriving as CANCEL.
// Plain JavaScript so it runs under plain Node, from src/ as from dist/ (see messages.mjs).
import { parentPort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { ToChild, ToParent, errorToWire } from './messages.mjs';
import { jobProxy } from './job-proxy.mjs';

const inThread = parentPort !== null;
const post = inThread ? (m) => parentPort.postMessage(m) : (m) => process.send(m);

let processor;
/** The running attempt: its AbortController and the CALLs awaiting their REPLY. */
let current;
let stopping = false;
let nextRid = 1;

async function load(file) {
  try {
    const mod = await import(pathToFileURL(file).href);
    // ESM default export, CommonJS module.exports (= default), or a transpiled `exports.default`.
    let fn = mod.default;
    if (fn && typeof fn === 'object' && typeof fn.default === 'function') fn = fn.default;
    if (typeof fn !== 'function') {
      throw new Error(`No function is exported in processor file (its default export is ${fn === undefined ? 'missing' : typeof fn})`);
    }
    processor = fn;
    post({ t: ToParent.READY });
  } catch (err) {
    post({ t: ToParent.LOAD_FAILED, error: errorToWire(err) });
    // A child that cannot load is useless: exit (the parent also discards it).
    setImmediate(() => process.exit(1));
  }
}

function start(snapshot, token) {
  const ac = new AbortController();
  const calls = new Map();
  const attempt = { ac, calls };
  current = attempt;
  const call = (method, args) =>
    new Promise((resolve, reject) => {
      if (current !== attempt) return reject(new Error(`job.${method}: the job's attempt is over`));
      const rid = nextRid++;
      calls.set(rid, { resolve, reject });
      post({ t: ToParent.CALL, rid, method, args });
    });
  const job = jobProxy(snapshot, call);
  let result;
  try {
    result = processor(job, token, ac.signal);
  } catch (err) {
    return finish(attempt, { t: ToParent.FAILED, error: errorToWire(err) });
  }
  // A plain value completes without waiting a microtask turn.
  if (!result || typeof result.then !== 'function') return finish(attempt, { t: ToParent.DONE, value: result });
  result.then(
    (value) => finish(attempt, { t: ToParent.DONE, value }),
    (err) => finish(attempt, { t: ToParent.FAILED, error: errorToWire(err) }),
  );
}

function finish(attempt, msg) {
  if (current !== attempt) return;
  current = undefined;
  for (const c of attempt.calls.values()) c.reject(new Error('the job finished before the parent answered'));
  try {
    post(msg);
  } catch (err) {
    // The return value could not be serialized (a function, a cycle…): fail the job instead.
    if (msg.t !== ToParent.DONE) throw err;
    post({ t: ToParent.FAILED, error: errorToWire(err) });
  }
  if (stopping) process.exit(0);
}

function onMessage(msg) {
  switch (msg.t) {
    case ToChild.START:
      return start(msg.job, msg.token);
    case ToChild.REPLY: {
      const c = current?.calls.get(msg.rid);
      if (!c) return;
      current.calls.delete(msg.rid);
      if (msg.ok) c.resolve(msg.value);
      else c.reject(wireToError(msg.error));
      return;
    }
    case ToChild.CANCEL:
      current?.ac.abort(msg.error ? wireToError(msg.error) : msg.reason);
      return;
    case ToChild.INIT:
      return void load(msg.file);
    case ToChild.STOP:
      stopping = true;
      if (!current) process.exit(0);
      return;
  }
}

function wireToError(w) {
  const err = new Error(w.message);
  err.name = w.name;
  if (w.stack) err.stack = w.stack;
  if (w.props) Object.assign(err, w.props);
  return err;
}

// An error nobody caught leaves the processor in an unknown state: fail the running job with
// it and exit (fatal tells the parent not to reuse this child).
function fatal(err) {
  try {
    post({ t: ToParent.FAILED, error: errorToWire(err), fatal: true });
  } finally {
    current = undefined;
    setImmediate(() => process.exit(1));
  }
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

if (inThread) {
  parentPort.on('message', onMessage);
} else {
  process.on('message', onMessage);
  // The parent went away (crashed or killed): nothing can be reported any more.
  process.on('disconnect', () => process.exit(0));
}
