/**
 * BullMQ 6's type names for jobs, sandboxed jobs and flows, as echomq's own types (or the part of
 * them BullMQ's name covers), so a TypeScript program that imports them compiles with only the
 * package name changed. Options and connections: compat-types.ts.
 */
import type { IoredisListener } from './compat-types.js';
import type { Job } from './job/job.js';
import type { FlowJob, FlowOpts, FlowProducer } from './lifecycle/flow-producer.js';
import type { QueueBase } from './queue/queue-base.js';

/** A Job's data, result and identity fields and its basic calls (what BullMQ's Job implements). */
export type MinimalJob<D = any, R = any, N extends string = string> = Pick<Job<D, R, N>,
  | 'name' | 'data' | 'opts' | 'id' | 'progress' | 'returnvalue' | 'stacktrace' | 'delay' | 'timestamp' | 'attemptsMade'
  | 'failedReason' | 'finishedOn' | 'processedOn' | 'parentKey' | 'parent' | 'repeatJobKey' | 'asJSON' | 'asJSONSandbox'
  | 'updateData' | 'updateProgress' | 'log' | 'queueName' | 'prefix' | 'queueQualifiedName'>;
/** The queue `new Job`, `Job.create` and `Job.fromJSON` are given: any echomq queue. */
export type MinimalQueue = QueueBase;
export type MoveToWaitingChildrenOpts = NonNullable<Parameters<Job['moveToWaitingChildren']>[1]>;
export type ParentKeyOpts = NonNullable<Parameters<Job['addJob']>[1]>;

/**
 * The job a sandboxed processor file gets: a snapshot of the job's fields and the Job calls its
 * child forwards to the worker (docs/sandboxed.md). The worker supplies the token of the attempt.
 */
export interface SandboxedJob<D = any, R = any> extends Pick<Job<D, R>,
  | 'id' | 'name' | 'data' | 'opts' | 'queueName' | 'lane' | 'priority' | 'delay' | 'attemptsMade' | 'attemptsStarted'
  | 'stalledCounter' | 'timestamp' | 'processedOn' | 'progress' | 'parent' | 'parentKey' | 'repeatJobKey'
  | 'updateProgress' | 'log' | 'updateData' | 'getChildrenValues' | 'getIgnoredChildrenFailures' | 'getDependencies' | 'getDependenciesCount'> {
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
  moveToWait(token?: string): Promise<number>;
  moveToWaitingChildren(token?: string, opts?: MoveToWaitingChildrenOpts): Promise<boolean>;
}
/** A sandboxed processor file's default export: the same arguments as an inline Processor. */
export type SandboxedJobProcessor<D = any, R = any> = (job: SandboxedJob<D, R>, token: string, signal: AbortSignal) => R | PromiseLike<R>;

// Flows: BullMQ's FlowJob split by position in the tree, with the options each position allows.
type FlowJobOpts = NonNullable<FlowJob['opts']>;
export type FlowJobBase<T> = Omit<FlowJob, 'opts' | 'children'> & { opts?: T };
/** A child without children (no `parent`: the tree gives it). */
export type FlowNestedLeafJob = FlowJobBase<Omit<FlowJobOpts, 'parent' | 'repeat'>> & { children?: never };
/** A child with children (no deduplication: only a lone job may deduplicate). */
export type FlowParentJob = FlowJobBase<Omit<FlowJobOpts, 'deduplication' | 'parent' | 'repeat'>> & { children: FlowJobNode[] };
export type FlowJobNode = FlowParentJob | FlowNestedLeafJob;
export type FlowRootLeafJob = FlowJobBase<Omit<FlowJobOpts, 'repeat'>> & { children?: never };
export type FlowRootParentJob = FlowJobBase<Omit<FlowJobOpts, 'repeat'>> & { children: FlowJobNode[] };
export type FlowQueuesOpts = NonNullable<FlowOpts['queuesOptions']>;
/** flowProducer.getFlow's argument. */
export type NodeOpts = Parameters<FlowProducer['getFlow']>[0];
export interface FlowProducerListener extends IoredisListener {
  error: (failedReason: Error) => void;
}
