/**
 * The argument and reply shapes of the job-creating and claiming scripts, apart from the script
 * bindings so that flows, lifecycle scripts and the bindings can share them without importing
 * one another.
 */
import type { FailurePolicy } from '../core/options.js';
import { JobField } from '../core/fields.js';

/**
 * BullMQ's `parent` option of Queue.add, resolved for the add script: the parent's id, its
 * physical job key, queue name and prefix, the child's failure policy, whether it lives in the
 * adding queue (then add.lua checks it and registers the child atomically), the logical parent
 * key for BullMQ's error text, and the JSON add.lua reads (made once per job options).
 */
export interface ParentArgs {
  id: string;
  key: string;
  queue: string;
  prefix: string;
  policy: FailurePolicy;
  same: boolean;
  /** BullMQ's parent key: `<parent.queue>:<id>`. */
  logicalKey: string;
  json: string;
}

/** A new job as the scripts that create jobs take it (every field validated by the caller). */
export interface NewJobArgs {
  id: string; // '' = generate (add only)
  name: string;
  data: string;
  opts: string;
  priority: number;
  lane: string;
  delay: number;
  lifo: boolean;
  keepCompleted: [number, number];
  keepFailed: [number, number];
}

/** One job as the add script takes it. */
export interface AddJobArgs extends NewJobArgs {
  /** Deduplication id ('' or absent = none) and throttle ttl in ms (0 = simple mode). */
  dedupId?: string;
  dedupTtl?: number;
  /** Deduplication mode letters (e extend, r replace, s reschedule); absent = plain. */
  dedupMode?: string;
  /** Creation time (ms) given by the user; absent = the Redis clock. */
  timestamp?: number;
  /** BullMQ's `parent` option, resolved (src/job/flows.ts parentArgs). */
  parent?: ParentArgs;
  /** BullMQ Pro's group.maxSize (absent = none). */
  groupMaxSize?: number;
}

/** One add's outcome: created, or an existing/deduplicated job's id, or an error for this job alone. */
export interface AddReply {
  id: string;
  created: boolean;
  /** The job's parent is missing (BullMQ's "Missing key for parent job"): nothing was written for it. */
  error?: Error;
  /** Set with error when that error is the missing parent (a bulk add goes on without the job, as BullMQ's). */
  missingParent?: true;
  /** Not created: the job's group (lane) holds group.maxSize waiting jobs (BullMQ Pro). */
  groupFull?: true;
}

/** A claimed job: its id and its hash as a field/value list. */
export interface ClaimedJob {
  id: string;
  fields: string[];
}

/**
 * What a settle may take from a job's claim reply instead of reading it again: lane, kc, ka and
 * made as the reply gave them ('' when absent). None of them changes while the job is active.
 */
export type SettleHint = readonly [lane: string, keepCount: string, keepAge: string, made: string];

/** The settle hint of a claimed job's hash (its claim reply's fields as an object). */
export function settleHint(h: Readonly<Record<string, string>>): SettleHint {
  return [h[JobField.lane] ?? '', h[JobField.keepCompletedCount] ?? '', h[JobField.keepCompletedAge] ?? '', h[JobField.attemptsMade] ?? ''];
}

export interface ClaimReply {
  jobs: ClaimedJob[];
  /** When nothing was claimed: ms until delayed or rate-limited work becomes ready; -1 none. */
  wakeInMs: number;
}
