/**
 * Typed wrappers for the transitions only Job methods use (changeDelay, removeDeduplicationKey,
 * clearParent). Same conventions as `./index.ts`: named keys from each script's `-- KEYS:`
 * header, named arguments, parsed replies.
 */
import { bindScript as call, type ScriptContext } from './runner.js';
import { bindOnceScript } from './request-id.js';

const applied = {
  changeDelay: bindOnceScript('changeDelay'),
  removeDeduplicationKey: bindOnceScript('removeDeduplicationKey'),
};
const raw = {
  clearParent: call('clearParent'),
};

export const JOB_SCRIPT_NAMES = [...Object.keys(applied), ...Object.keys(raw)];

export const jobScripts = {
  /** 1, or -1 no such job / -3 not delayed. Applied once (request id last): a resend reschedules nothing. */
  changeDelay: async (ctx: ScriptContext, a: { id: string; delay: number }, rid?: string) =>
    Number(await applied.changeDelay(ctx, [a.id, a.delay], rid)),
  /**
   * Whether the job held the deduplication id (it is free afterwards either way, unless another
   * job holds it). Applied once: a resend replies the first run's answer.
   */
  removeDeduplicationKey: async (ctx: ScriptContext, a: { dedupId: string; id: string }, rid?: string) =>
    Number(await applied.removeDeduplicationKey(ctx, [a.dedupId, a.id], rid)) === 1,
  /** 1 cleared, 0 the job names another parent or none, -1 no such job. */
  clearParent: async (ctx: ScriptContext, a: { id: string; parentKey: string }) => Number(await raw.clearParent(ctx, [a.id, a.parentKey])),
};
