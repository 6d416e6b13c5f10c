/**
 * BullMQ's per-minute job metrics (getMetrics) and its Prometheus text (exportPrometheusMetrics
 * with globalVariables). Read-only.
 *
 * Layout (src/core/keys.ts, written by workers with the `metrics` option, as BullMQ's workers do):
 * `metricsCompleted` is a hash { count: jobs finished so far, prevTS: ms of the last time a point
 * was pushed (or of the first finish), prevCount: count at that time }; `metricsCompletedData` a
 * list of per-minute counts, newest first, trimmed to maxDataPoints. When a job finishes in a
 * later minute than prevTS, the writer pushes the jobs of prevTS's minute (count − prevCount)
 * followed by one 0 for each empty minute in between, so `data` holds completed minutes only:
 * the current minute is in count − prevCount until the next push. Same for failed.
 */
import type { RedisClient } from '../core/connection.js';
import type { QueueKeys } from '../core/keys.js';
import { MetricsField } from '../core/fields.js';

/** BullMQ's Metrics. */
export interface Metrics {
  meta: { count: number; prevTS: number; prevCount: number };
  /** Jobs per minute, newest minute first (minutes with no job are 0). */
  data: number[];
  /** Points stored (the length of the whole list, whatever start…end asked for). */
  count: number;
}

/** Points start…end (0 = newest, -1 = oldest; LRANGE semantics) of one metric, in one MULTI. */
export async function readMetrics(client: RedisClient, keys: QueueKeys, type: 'completed' | 'failed', start: number, end: number): Promise<Metrics> {
  const [meta, data] = type === 'completed' ? [keys.metricsCompleted, keys.metricsCompletedData] : [keys.metricsFailed, keys.metricsFailedData];
  const r = (await client.multi().hmget(meta, MetricsField.count, MetricsField.prevTS, MetricsField.prevCount).lrange(data, start, end).llen(data).exec())!;
  for (const [err] of r) if (err) throw err;
  const [count, prevTS, prevCount] = (r[0][1] as Array<string | null>).map((x) => parseInt(x || '0', 10));
  return {
    meta: { count, prevTS, prevCount },
    data: (r[1][1] as string[]).map((p) => +p || 0),
    count: Number(r[2][1]),
  };
}

/** Prometheus label value escaping (text exposition format: backslash, double quote, newline). */
export const escapeLabel = (value: string): string => String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/**
 * BullMQ's Prometheus text for one queue, line for line: job counts per state (BullMQ's default
 * states, in its order), then the completed and failed totals of the metrics hashes. The metric
 * names stay BullMQ's (`bullmq_job_count`, `bullmq_job_completed_total`,
 * `bullmq_job_failed_total`) so dashboards and alerts written for BullMQ keep working.
 */
export function bullmqPrometheusText(
  queueName: string,
  counts: Record<string, number>,
  completed: Metrics,
  failed: Metrics,
  globalVariables?: Record<string, string>,
): string {
  const q = escapeLabel(queueName);
  const extra = globalVariables
    ? Object.keys(globalVariables).map((k) => `, ${k}="${escapeLabel(globalVariables[k])}"`).join('')
    : '';
  const lines = ['# HELP bullmq_job_count Number of jobs in the queue by state', '# TYPE bullmq_job_count gauge'];
  for (const [state, n] of Object.entries(counts)) lines.push(`bullmq_job_count{queue="${q}", state="${state}"${extra}} ${n}`);
  lines.push(
    '# HELP bullmq_job_completed_total Total number of completed jobs',
    '# TYPE bullmq_job_completed_total counter',
    `bullmq_job_completed_total{queue="${q}"${extra}} ${completed.meta.count}`,
    '# HELP bullmq_job_failed_total Total number of failed jobs',
    '# TYPE bullmq_job_failed_total counter',
    `bullmq_job_failed_total{queue="${q}"${extra}} ${failed.meta.count}`,
  );
  return lines.join('\n');
}

/** Keys of echomq's MetricsOptions (src/ops/metrics.ts): an object with one of them is echomq's options. */
const METRICS_OPTION_KEYS = new Set(['prefix', 'queues', 'maxQueues', 'maxLanes', 'maxEventsPerScrape', 'labels']);

/**
 * Tells BullMQ's `globalVariables` (a plain object of string label values) from echomq's
 * MetricsOptions: an object that has one of MetricsOptions' keys, or a value that is not a
 * string, is echomq's options.
 */
export function isGlobalVariables(arg: unknown): arg is Record<string, string> {
  if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) return false;
  return Object.entries(arg).every(([k, val]) => !METRICS_OPTION_KEYS.has(k) && typeof val === 'string');
}
