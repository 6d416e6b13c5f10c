/// <reference lib="dom" />
/**
 * Browser side, the entry (bundled by esbuild into /app.js, see ../bundle.ts): the header with the
 * connection and mode badges and the token form, the poll tick, and the view the URL names.
 */
import { render } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import type { ConfigReply } from '../api.js';
import { getJson, hasToken, postJson, setToken } from './requests.js';
import { go, takeToken, useRoute } from './route.js';
import { Ctx, type AppCtx } from './ui.js';
import { Overview } from './overview.js';
import { QueueView } from './queue.js';
import { JobPanel } from './job-panel.js';

const POLL_MS = 1500;

function App() {
  const route = useRoute();
  const [config, setConfig] = useState<ConfigReply | null>(null);
  const [tick, setTick] = useState(0);
  const [conn, setConn] = useState<{ ok: boolean; text: string }>({ ok: false, text: 'connecting…' });
  const [, setTokenShown] = useState(hasToken());
  const [toast, setToast] = useState<{ text: string; bad: boolean } | null>(null);

  // The config is read again until it answers, so a page opened while Redis is down recovers.
  useEffect(() => {
    if (config) return;
    getJson<ConfigReply>('api/config').then(setConfig, (e: Error) => setConn({ ok: false, text: e.message }));
  }, [tick, config]);
  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), POLL_MS);
    return () => clearInterval(t);
  }, []);
  useEffect(() => {
    if (!toast) return;
    const t = setTimeout(() => setToast(null), 4000);
    return () => clearTimeout(t);
  }, [toast]);

  const report = useCallback((err: Error | null) => setConn(err ? { ok: false, text: err.message } : { ok: true, text: 'live' }), []);
  const canAct = !!config && !config.readOnly && (!config.tokenRequired || hasToken());
  const ctx = useMemo<AppCtx | null>(() => config && {
    config, tick, canAct, report,
    act: async <T,>(path: string, body: Record<string, unknown>, done: string | ((r: T) => string)) => {
      try {
        const r = await postJson<T>(path, body);
        setToast({ text: typeof done === 'string' ? done : done(r), bad: false });
        setTick((n) => n + 1);
        return r;
      } catch (e) {
        setToast({ text: 'Refused: ' + (e as Error).message, bad: true });
        return null;
      }
    },
  }, [config, tick, canAct, report]);

  const mode = !config ? '' : config.readOnly ? 'read-only' : canAct ? 'actions enabled' : 'token needed for actions';
  return (
    <>
      <header>
        <a class="brand" href="?" onClick={(e) => { e.preventDefault(); go({ queue: null, job: null, jobQueue: null, state: '', lane: '', id: '', cursor: '', tab: 'jobs' }); }}>echomq</a>
        {route.queue && <span class="crumb" title={route.queue}>› {route.queue}</span>}
        <span id="conn" class={'badge ' + (conn.ok ? 'ok' : 'bad')} title={conn.text}>{conn.text}</span>
        <span id="mode" class={'badge ' + (mode === 'actions enabled' ? 'ok' : mode === 'read-only' ? '' : 'warn')}>{mode}</span>
        {config && !config.readOnly && config.tokenRequired && (
          <form id="tokenForm" class="token" onSubmit={(e) => {
            e.preventDefault();
            const input = (e.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
            setToken(input.value);
            input.value = '';
            setTokenShown(hasToken());
          }}>
            <input id="tokenInput" name="token" type="password" placeholder="token for actions" autocomplete="off" />
            <button type="submit">Use token</button>
          </form>
        )}
      </header>
      {ctx ? (
        <Ctx.Provider value={ctx}>
          <main>{route.queue ? <QueueView route={route} /> : <Overview />}</main>
          {route.job && <JobPanel queue={route.jobQueue ?? route.queue ?? ''} id={route.job} />}
        </Ctx.Provider>
      ) : (
        <main><p class="muted">{conn.text}</p></main>
      )}
      {toast && <div id="toast" role="status" class={toast.bad ? 'bad' : ''}>{toast.text}</div>}
    </>
  );
}

setToken(takeToken());
render(<App />, document.getElementById('app')!);
