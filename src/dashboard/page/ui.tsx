/// <reference lib="dom" />
/**
 * Browser side: what every view shares. The App context (config, the poll tick, actions with
 * their toast), the polling hook, and small pieces: a cut-off cell with its full text on hover,
 * times and ages. Text goes into the page only through Preact's text nodes and attributes, never
 * as HTML, so a name like `<img onerror=…>` shows as text.
 */
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { ConfigReply } from '../api.js';
import { getJson, postJson } from './requests.js';

export interface AppCtx {
  config: ConfigReply;
  /** Advances every poll period; views refetch on it. */
  tick: number;
  canAct: boolean;
  /** Runs an action, shows the outcome, and polls again. Resolves to the reply or null. */
  act<T = unknown>(path: string, body: Record<string, unknown>, done: string | ((r: T) => string)): Promise<T | null>;
  /** Reports a read's failure or success (the connection badge). */
  report(err: Error | null): void;
}

export const Ctx = createContext<AppCtx>(null as unknown as AppCtx);
export const useApp = (): AppCtx => useContext(Ctx);

/**
 * GETs `path` now and on every tick while `live` (a paused list keeps its rows). The previous
 * reply stays shown while the next one loads, so nothing flickers or jumps.
 */
export function usePoll<T>(path: string | null, live = true): { data: T | null; error: string | null; reload: () => void } {
  const { tick, report } = useApp();
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [nonce, setNonce] = useState(0);
  const shown = useRef<string | null>(null);
  const liveTick = useRef(tick);
  if (live) liveTick.current = tick;
  useEffect(() => {
    if (path === null) return;
    if (shown.current !== path) setData(null);
    let gone = false;
    getJson<T>(path).then(
      (d) => {
        if (gone) return;
        shown.current = path;
        setData(d);
        setError(null);
        report(null);
      },
      (e: Error) => {
        if (gone) return;
        setError(e.message);
        report(e);
      },
    );
    return () => {
      gone = true;
    };
  }, [path, liveTick.current, nonce]);
  return { data: path === null ? null : data, error, reload: () => setNonce((n) => n + 1) };
}

/** A table cell cut off by its column, with the full text as its tooltip. */
export function Cut({ text, cls }: { text: string | number | null | undefined; cls?: string }) {
  const s = text === null || text === undefined ? '' : String(text);
  return <td class={'cut ' + (cls ?? '')} title={s}>{s}</td>;
}

export function Num({ n, cls }: { n: number; cls?: string }) {
  return <td class={'num ' + (cls ?? '')}>{n.toLocaleString('en-US')}</td>;
}

export function time(ms: number | null | undefined): string {
  return typeof ms === 'number' && ms > 0 ? new Date(ms).toLocaleString() : '—';
}

export function age(ms: number): string {
  const s = Math.max(0, ms / 1000);
  return s < 60 ? Math.round(s) + 's' : s < 3600 ? Math.round(s / 60) + 'm' : s < 86400 ? (s / 3600).toFixed(1) + 'h' : (s / 86400).toFixed(1) + 'd';
}

export const ago = (ms: number): string => age(Date.now() - ms) + ' ago';

export function Button(props: { onClick: () => void; children: ComponentChildren; id?: string; danger?: boolean; action?: boolean; disabled?: boolean; title?: string }) {
  const { canAct } = useApp();
  const off = props.disabled || (props.action !== false && !canAct);
  return (
    <button
      id={props.id}
      class={props.danger ? 'action danger' : props.action === false ? '' : 'action'}
      disabled={off}
      title={props.title ?? (props.action !== false && !canAct ? 'actions need the token (or are off: read-only)' : undefined)}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}

export { postJson };

/** Props that make a clickable table row reachable by keyboard: Tab to it, Enter or Space opens it. */
export function rowKeys(open: () => void) {
  return {
    tabIndex: 0,
    onKeyDown: (e: KeyboardEvent) => {
      if (e.target !== e.currentTarget || (e.key !== 'Enter' && e.key !== ' ')) return;
      e.preventDefault();
      open();
    },
  };
}
