/// <reference lib="dom" />
// Browser code, type-checked in the same program as the server (so `npx tsc --noEmit` covers it);
// the directive keeps the DOM types here even if tsconfig.json ever names a narrower "lib".
/**
 * Browser side: the page's elements by id, and the only ways the script puts text into the page.
 * Rule: user strings (queue, lane and job names, data, errors, logs) are only ever put into the
 * page with textContent or as SVG numbers, never through innerHTML, so a name like
 * `<img onerror=…>` shows as text.
 */

/**
 * Every element the script looks up, with its tag in page.ts's HTML. `$` is typed from this
 * table, so a misspelt id or a wrong element kind is a type error, and test/dashboard-script
 * checks the table against the HTML.
 */
export const ELEMENTS = {
  conn: 'span',
  mode: 'span',
  tokenForm: 'form',
  tokenInput: 'input',
  queues: 'table',
  noQueues: 'p',
  queueBox: 'section',
  queueTitle: 'h2',
  queueState: 'span',
  queuePause: 'button',
  retryFailed: 'button',
  counts: 'div',
  rateNow: 'span',
  chart: 'svg',
  laneNote: 'span',
  lanes: 'table',
  lanePanel: 'div',
  laneName: 'span',
  lanePause: 'button',
  laneWeight: 'input',
  laneWeightSet: 'button',
  laneLimit: 'input',
  laneLimitSet: 'button',
  laneJobs: 'button',
  laneClose: 'button',
  jobState: 'select',
  jobLane: 'input',
  jobPrev: 'button',
  jobNext: 'button',
  jobPage: 'span',
  jobs: 'table',
  jobDetail: 'div',
  jobId: 'span',
  jobRetry: 'button',
  jobRemove: 'button',
  jobClose: 'button',
  jobFields: 'dl',
  jobData: 'pre',
  jobError: 'pre',
  jobLogs: 'pre',
  toast: 'div',
} as const;

type Tags = HTMLElementTagNameMap & Pick<SVGElementTagNameMap, 'svg'>;
export type ElementId = keyof typeof ELEMENTS;

/** The page's element with this id (looked up on every call, as the page never replaces them). */
export function $<K extends ElementId>(id: K): Tags[(typeof ELEMENTS)[K]] {
  return document.getElementById(id) as unknown as Tags[(typeof ELEMENTS)[K]];
}

const SVG = 'http://www.w3.org/2000/svg';

/** A new element showing `text` (also as its tooltip, for cells cut off by the column width). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string | number | null, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) {
    e.textContent = String(text);
    e.title = String(text);
  }
  if (cls) e.className = cls;
  return e;
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  Object.keys(attrs).forEach((k) => e.setAttribute(k, String(attrs[k])));
  return e;
}

export function enc(s: string): string {
  return encodeURIComponent(s);
}

export function time(ms: number | null | undefined): string {
  return typeof ms === 'number' ? new Date(ms).toLocaleString() : '—';
}

export function ago(ms: number): string {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 60 ? Math.round(s) + 's ago' : s < 3600 ? Math.round(s / 60) + 'm ago' : s < 86400 ? (s / 3600).toFixed(1) + 'h ago' : (s / 86400).toFixed(1) + 'd ago';
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;

/** Shows a message at the bottom right for four seconds; `bad` shows it in red. */
export function toast(text: string, bad: boolean): void {
  const t = $('toast');
  t.textContent = text;
  t.className = bad ? 'bad' : '';
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    t.hidden = true;
  }, 4000);
}
