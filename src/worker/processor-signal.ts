/**
 * Whether a processor can see its third argument, the AbortSignal. Building a signal costs about
 * 1.8 µs per job, so a processor that cannot name it gets undefined there. It can see it when it
 * declares three parameters, or rest or default parameters (length 0 with a parameter list), or
 * is a non-arrow function that reads `arguments`. Anything this cannot read says yes.
 */
export function processorSeesSignal(fn: (...args: never[]) => unknown): boolean {
  if (fn.length >= 3) return true;
  if (fn.length > 0) return false;
  const src = Function.prototype.toString.call(fn);
  const open = src.indexOf('(');
  if (open < 0 || src.indexOf('[native code]') >= 0) return true;
  const close = src.indexOf(')', open + 1);
  // Only an empty list `()` with nothing but spaces inside is read as "no parameters".
  if (close < 0 || src.slice(open + 1, close).trim() !== '') return true;
  // An arrow function has no `arguments` of its own; a function or method might read them.
  if (/^\s*=>/.test(src.slice(close + 1))) return false;
  return /\barguments\b/.test(src);
}

/**
 * Names an anonymous processor `processor`. V8 otherwise names an inline arrow function after
 * nearby code in the caller (`new Worker(q, async (job) => …, { connection })` shows up in stack
 * traces as `Worker.connection.connection [as processor]`). A function with a name keeps it.
 */
export function nameProcessor(fn: (...args: never[]) => unknown): void {
  if (fn.name !== '') return;
  try {
    Object.defineProperty(fn, 'name', { value: 'processor', configurable: true });
  } catch {
    // A frozen function keeps V8's inferred name.
  }
}
