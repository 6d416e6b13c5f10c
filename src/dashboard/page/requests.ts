/**
 * Browser side: the page's requests to the dashboard API. Reads are plain GETs; actions are
 * POSTs with the headers server.ts requires (X-Echomq-Action, and the token when there is one).
 */
import { toast } from './dom.js';
import { S } from './state.js';

let afterAction: () => unknown = () => undefined;

/** What to run after an action succeeded (app.ts: poll again so the page shows its effect). */
export function onActionDone(fn: () => unknown): void {
  afterAction = fn;
}

/** The reply's JSON; an error reply throws with the server's message. */
function answer(r: Response): Promise<any> {
  return r
    .json()
    .catch(() => ({}))
    .then((body) => {
      if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
      return body;
    });
}

/** GETs an API path; the reply is typed by the caller with the server's reply types (api.ts). */
export function getJson<T>(path: string): Promise<T> {
  return fetch(path, { headers: { Accept: 'application/json' } }).then(answer);
}

/** POSTs an action; resolves to the reply, or null after showing why it was refused. */
export function act<T = unknown>(path: string, body: Record<string, unknown> | null, done: string): Promise<T | null> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Echomq-Action': '1' };
  if (S.token) headers.Authorization = 'Bearer ' + S.token;
  return fetch(path, { method: 'POST', headers, body: JSON.stringify(body || {}) })
    .then(answer)
    .then(
      (reply: T) => {
        toast(done, false);
        afterAction();
        return reply;
      },
      (err: Error) => {
        toast('Refused: ' + err.message, true);
        return null;
      },
    );
}
