// Types of messages.mjs (the protocol is written in plain JavaScript so the child needs no loader).

export declare const ToChild: Readonly<{ INIT: 1; START: 2; CANCEL: 3; REPLY: 4; STOP: 5 }>;
export declare const ToParent: Readonly<{ READY: 11; LOAD_FAILED: 12; DONE: 13; FAILED: 14; CALL: 15 }>;

export type SandboxJobMethod =
  | 'updateProgress' | 'log' | 'updateData' | 'getChildrenValues' | 'getIgnoredChildrenFailures'
  | 'getDependencies' | 'getDependenciesCount' | 'moveToDelayed' | 'moveToWait' | 'moveToWaitingChildren';
export declare const JOB_METHODS: Readonly<Record<SandboxJobMethod, number>>;

/** An error crossing the boundary. */
export interface WireError {
  message: string;
  name: string;
  stack: string | undefined;
  props: Record<string, string | number | boolean | null> | undefined;
}
export declare function errorToWire(err: unknown): WireError;

/** What the child sees of the job (job-proxy.mjs adds the methods). */
export interface JobSnapshot {
  id: string;
  name: string;
  data: unknown;
  opts: unknown;
  queueName: string;
  lane: string;
  priority: number;
  delay: number;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  timestamp: number;
  processedOn: number | undefined;
  progress: unknown;
  parent: { id?: string; queueKey: string; fpof?: boolean; rdof?: boolean; idof?: boolean } | undefined;
  parentKey: string | undefined;
  repeatJobKey: string | undefined;
}

export type ParentMessage =
  | { t: 1; file: string }
  | { t: 2; job: JobSnapshot; token: string }
  | { t: 3; reason?: string; error?: WireError }
  | { t: 4; rid: number; ok: true; value: unknown }
  | { t: 4; rid: number; ok: false; error: WireError }
  | { t: 5 };

export type ChildMessage =
  | { t: 11 }
  | { t: 12; error: WireError }
  | { t: 13; value: unknown }
  | { t: 14; error: WireError; fatal?: boolean }
  | { t: 15; rid: number; method: SandboxJobMethod; args: unknown[] };
