/// <reference lib="dom" />
/**
 * Browser side: the page's requests. Paths are relative (`api/…`), so the page works under any
 * base path it is mounted at. Reads are plain GETs; actions are POSTs with the headers the
 * handler requires (X-Echomq-Action, and the token when there is one).
 */

let token = '';
export function setToken(t: string): void {
  token = t;
  if (t) sessionStorage.setItem('echomq.token', t);
  else sessionStorage.removeItem('echomq.token');
}
export const hasToken = (): boolean => token !== '';

/** `api/queues/<q>` plus `rest`, every name URL-encoded as one segment. */
export const qpath = (queue: string, rest = ''): string => 'api/queues/' + encodeURIComponent(queue) + rest;

async function answer<T>(r: Response): Promise<T> {
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((body as { error?: string }).error || 'HTTP ' + r.status);
  return body as T;
}

export function getJson<T>(path: string): Promise<T> {
  return fetch(path, { headers: { Accept: 'application/json' } }).then((r) => answer<T>(r));
}

export function postJson<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Echomq-Action': '1' };
  if (token) headers.Authorization = 'Bearer ' + token;
  return fetch(path, { method: 'POST', headers, body: JSON.stringify(body) }).then((r) => answer<T>(r));
}
