/// <reference lib="dom" />
/**
 * Browser side: the view shown is the page URL's query (`?queue=…&tab=…&state=…&lane=…&job=…`),
 * so every view can be linked, bookmarked and reached with the back button. The token never goes
 * into it: it arrives once in the fragment (`#token=…`), is kept for the tab and taken out of
 * the address bar at once.
 */
import { useEffect, useState } from 'preact/hooks';

export type Tab = 'jobs' | 'lanes' | 'workers' | 'schedulers';
export const TABS: Tab[] = ['jobs', 'lanes', 'workers', 'schedulers'];

export interface Route {
  queue: string | null;
  tab: Tab;
  /** Job list filters: state ('' = all), lane, exact id searched, page cursor. */
  state: string;
  lane: string;
  id: string;
  cursor: string;
  /** The job whose panel is open, and its queue (a child may live in another queue). */
  job: string | null;
  jobQueue: string | null;
  /** Lanes tab: names starting with `find`, the page after the name `after`. */
  find: string;
  after: string;
  /** Lanes tab: the column sorted by, `-` first for largest first ('' = by name). */
  sort: string;
  /** Jobs whose name contains this (a resumable scan). */
  name: string;
}

const KEYS: Array<keyof Route> = ['queue', 'tab', 'state', 'lane', 'id', 'cursor', 'job', 'jobQueue', 'find', 'after', 'name', 'sort'];

export function parseRoute(search: string): Route {
  const p = new URLSearchParams(search);
  const tab = p.get('tab') as Tab;
  return {
    queue: p.get('queue') || null,
    tab: TABS.includes(tab) ? tab : 'jobs',
    state: p.get('state') || '',
    lane: p.get('lane') || '',
    id: p.get('id') || '',
    cursor: p.get('cursor') || '',
    job: p.get('job') || null,
    jobQueue: p.get('jobQueue') || null,
    find: p.get('find') || '',
    after: p.get('after') || '',
    name: p.get('name') || '',
    sort: p.get('sort') || '',
  };
}

/** The query string of a route: only what differs from the defaults, so links stay short. */
export function routeSearch(r: Route): string {
  const p = new URLSearchParams();
  for (const k of KEYS) {
    const val = r[k];
    if (val === null || val === '' || (k === 'tab' && val === 'jobs')) continue;
    p.set(k, String(val));
  }
  const s = String(p);
  return s ? '?' + s : location.pathname;
}

let listeners: Array<(r: Route) => void> = [];

/** Shows another view: a new history entry (replace=false) or the same one updated. */
export function go(change: Partial<Route>, replace = false): void {
  const next = { ...parseRoute(location.search), ...change };
  const url = routeSearch(next);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((l) => l(next));
}

/** The current route, following links, go() and the back and forward buttons. */
export function useRoute(): Route {
  const [r, setR] = useState(() => parseRoute(location.search));
  useEffect(() => {
    const onPop = () => setR(parseRoute(location.search));
    listeners.push(setR);
    window.addEventListener('popstate', onPop);
    return () => {
      listeners = listeners.filter((l) => l !== setR);
      window.removeEventListener('popstate', onPop);
    };
  }, []);
  return r;
}

/** Takes `#token=` out of the address bar into this tab's storage; returns the token kept. */
export function takeToken(): string {
  const hash = new URLSearchParams(location.hash.slice(1));
  const t = hash.get('token');
  if (t) {
    sessionStorage.setItem('echomq.token', t);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem('echomq.token') || '';
}
