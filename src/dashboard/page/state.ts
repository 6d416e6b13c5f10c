/**
 * Browser side: what the page remembers between polls, and the token and queue it was opened
 * with. One object, so every module reads the same values.
 */
import type { ConfigReply, JobReply, QueueReply } from '../api.js';
import { enc } from './dom.js';

export type Lane = QueueReply['lanes'][number];
/** Lane table columns that sort (the th data-key attributes in page.ts). */
export type SortKey = 'name' | 'depth' | 'active' | 'weight' | 'limit' | 'paused' | 'rate';

/** Depth samples kept per lane for the sparkline (about 2 minutes at 1.5 s). */
export const HIST = 80;

export interface State {
  config: ConfigReply | null;
  /** The queue shown (from `#queue=` or a click). */
  queue: string | null;
  status: QueueReply | null;
  lanes: Lane[];
  /** Recent depths per lane, oldest first. */
  hist: Map<string, number[]>;
  sort: { key: SortKey; dir: 1 | -1 };
  /** The lane whose panel is open. */
  lane: string | null;
  jobOffset: number;
  jobLimit: number;
  jobMore: boolean;
  /** The job whose detail is open. */
  jobId: string | null;
  job: JobReply | null;
  token: string;
  /** A refresh is in flight; the next tick skips. */
  busy: boolean;
}

export const S: State = {
  config: null, queue: null, status: null, lanes: [], hist: new Map(), sort: { key: 'name', dir: 1 },
  lane: null, jobOffset: 0, jobLimit: 50, jobMore: false, jobId: null, job: null, token: '', busy: false,
};

/**
 * Reads `#token=` and `#queue=`. The token arrives in the fragment so it is never sent to the
 * server; it is kept for this tab only and taken out of the address bar.
 */
export function readFragment(): void {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('token')) {
    sessionStorage.setItem('echomq.token', hash.get('token')!);
    hash.delete('token');
    history.replaceState(null, '', location.pathname + location.search + (String(hash) ? '#' + String(hash) : ''));
  }
  S.token = sessionStorage.getItem('echomq.token') || '';
  if (hash.get('queue')) S.queue = hash.get('queue');
}

/** The API path of the shown queue, plus `rest`. */
export function qpath(rest?: string): string {
  return '/api/queues/' + enc(S.queue!) + (rest || '');
}
