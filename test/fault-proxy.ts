/**
 * A TCP proxy on loopback that loses replies the way a network does: it reads the RESP
 * commands going to Redis and the replies coming back, and when its policy says so it drops
 * a reply (Redis already ran the command) and cuts the connection, so ioredis reconnects and
 * resends the unanswered commands. It can also delay every packet. Used by
 * test/reliability-once.test.ts; no mocks: the commands run on the real test Redis.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { loadLibrary, loadScript } from '../src/scripts/loader.js';
import { SCRIPT_NAMES } from '../src/scripts/index.js';

/** A command as the proxy sees it: its name (upper case) and first argument. */
export interface SeenCommand {
  name: string;
  arg: string;
}

/** The echomq transition a command calls (FCALL of the library or EVALSHA of its script), if any. */
export function transitionOf(c: SeenCommand): string | undefined {
  if (c.name === 'FCALL') {
    const tag = `emq_${loadLibrary().tag}_`;
    return c.arg.startsWith(tag) ? c.arg.slice(tag.length) : undefined;
  }
  if (c.name === 'EVALSHA') return scriptNames().get(c.arg) ?? (c.arg.length === 40 ? 'evalsha' : undefined);
  // A script not cached yet (NOSCRIPT) is sent once in full: named by its source.
  if (c.name === 'EVAL') return scriptNames().get(c.arg) ?? 'eval';
  return undefined;
}

let names: Map<string, string> | undefined;
/** Every echomq script by its sha and by its source. */
function scriptNames(): Map<string, string> {
  if (!names) {
    names = new Map();
    for (const n of SCRIPT_NAMES) {
      const s = loadScript(n);
      names.set(s.sha, n);
      names.set(s.source, n);
    }
  }
  return names;
}

/** Every script call (FCALL / EVALSHA / EVAL, echomq's or BullMQ's). */
export const isScriptCall = (c: SeenCommand): boolean => c.name === 'FCALL' || c.name === 'EVALSHA' || c.name === 'EVAL';

/** Deterministic PRNG (mulberry32) for seeded random drops. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Drop policies: which replies are lost. `n` counts the replies the filter matched, from 1. */
export type DropPolicy = (c: SeenCommand, n: number) => boolean;
export const everyNth = (k: number, filter: (c: SeenCommand) => boolean = isScriptCall): DropPolicy => {
  let n = 0;
  return (c) => filter(c) && ++n % k === 0;
};
/** Drops the first k replies the filter matches, then none. */
export const firstK = (k: number, filter: (c: SeenCommand) => boolean = isScriptCall): DropPolicy => {
  let n = 0;
  return (c) => filter(c) && ++n <= k;
};
export const randomly = (p: number, seed: number, filter: (c: SeenCommand) => boolean = isScriptCall): DropPolicy => {
  const r = seeded(seed);
  return (c) => filter(c) && r() < p;
};

/** End of the RESP value starting at i, or -1 when it is not complete yet. */
function respEnd(b: Buffer, i: number): number {
  if (i >= b.length) return -1;
  const nl = b.indexOf('\r\n', i);
  if (nl < 0) return -1;
  const t = String.fromCharCode(b[i]!);
  if ('+-:_,#('.includes(t)) return nl + 2;
  const n = Number(b.toString('latin1', i + 1, nl));
  if (t === '$' || t === '=' || t === '!') {
    if (n < 0) return nl + 2;
    const end = nl + 2 + n + 2;
    return end <= b.length ? end : -1;
  }
  if (n < 0) return nl + 2;
  let j = nl + 2;
  for (let k = 0; k < (t === '%' ? 2 * n : n); k++) {
    j = respEnd(b, j);
    if (j < 0) return -1;
  }
  return j;
}

/** The command name and first argument of a RESP array of bulk strings (ioredis' encoding). */
function commandOf(b: Buffer, start: number): SeenCommand {
  const parts: string[] = [];
  let nl = b.indexOf('\r\n', start);
  let j = nl + 2;
  for (let k = 0; k < 2 && j < b.length && b[j] === 0x24; k++) {
    nl = b.indexOf('\r\n', j);
    const len = Number(b.toString('latin1', j + 1, nl));
    parts.push(b.toString('utf8', nl + 2, nl + 2 + len));
    j = nl + 2 + len + 2;
  }
  return { name: (parts[0] ?? '').toUpperCase(), arg: parts[1] ?? '' };
}

const NOT_RUN = ['-NOSCRIPT', '-ERR Function not found'];
const notRun = (b: Buffer, i: number): boolean => NOT_RUN.some((t) => b.toString('latin1', i, i + t.length) === t);

export class FaultProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  connections = 0;
  /** Replies dropped (each with a connection cut), by transition or command name. */
  readonly dropped = new Map<string, number>();
  /** Which replies to drop (none by default); may be replaced at any time. */
  policy: DropPolicy = () => false;
  /** Delay (ms) added to every packet in both directions (0 = none). */
  delayMs = 0;
  /**
   * Runs when a reply is dropped, before the connection is cut: the client still waits for
   * that reply, so what the hook does lands between the first run and the resend.
   */
  onDrop: ((what: string) => Promise<unknown> | void) | undefined;

  constructor(private readonly target: { host: string; port: number }) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get droppedTotal(): number {
    let n = 0;
    for (const v of this.dropped.values()) n += v;
    return n;
  }

  async start(): Promise<void> {
    const server = createServer((down) => this.pipe(down));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  private pipe(down: Socket): void {
    this.connections++;
    const up = connect(this.target.port, this.target.host);
    const pending: SeenCommand[] = [];
    let fromClient: Buffer = Buffer.alloc(0);
    let fromServer: Buffer = Buffer.alloc(0);
    let dead = false;
    const kill = () => {
      dead = true;
      down.destroy();
      up.destroy();
    };
    for (const s of [down, up]) {
      this.sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        this.sockets.delete(s);
        kill();
      });
    }
    const later = (f: () => void) => (this.delayMs > 0 ? setTimeout(f, this.delayMs) : f());
    down.on('data', (chunk: Buffer) => {
      if (dead) return;
      // Commands are passed on at once; a copy is parsed to pair each reply with its command.
      fromClient = fromClient.length ? Buffer.concat([fromClient, chunk]) : chunk;
      let i = 0;
      for (let end = respEnd(fromClient, 0); end >= 0; end = respEnd(fromClient, i)) {
        pending.push(commandOf(fromClient, i));
        i = end;
      }
      fromClient = fromClient.subarray(i);
      later(() => !dead && up.write(chunk));
    });
    up.on('data', (chunk: Buffer) => {
      if (dead) return;
      fromServer = fromServer.length ? Buffer.concat([fromServer, chunk]) : chunk;
      let i = 0;
      for (let end = respEnd(fromServer, 0); end >= 0; end = respEnd(fromServer, i)) {
        const cmd = pending.shift() ?? { name: '?', arg: '' };
        // A script Redis did not have (NOSCRIPT, function not loaded) did not run: the client
        // sends it again in full, and that reply is the one a policy can drop.
        if (!notRun(fromServer, i) && this.policy(cmd, 0)) {
          // The command ran; its reply (and every reply after it) is lost with the connection.
          const what = transitionOf(cmd) ?? cmd.name;
          this.dropped.set(what, (this.dropped.get(what) ?? 0) + 1);
          const before = fromServer.subarray(0, i);
          dead = true; // nothing more passes either way
          const cut = () => later(() => {
            if (before.length) down.write(before, () => kill());
            else kill();
          });
          const hook = this.onDrop?.(what);
          if (hook) void hook.then(cut, cut);
          else cut();
          return;
        }
        i = end;
      }
      // Whole replies only, so a drop never cuts one in half.
      const out = fromServer.subarray(0, i);
      fromServer = fromServer.subarray(i);
      if (out.length) later(() => !dead && down.write(out));
    });
  }

  /** Stops accepting and destroys every open connection. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }
}

/** host and port of a redis:// URL, for a proxy (or a client) in front of that server. */
export function targetOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/**
 * What a test file opens around its proxies, closed in reverse at its end (`closeAll`): proxy()
 * starts a FaultProxy in front of `url`; open() registers anything with close() and ignores its
 * 'error' events (a cut connection emits them by design).
 */
export function faultScope(url: string): {
  proxy(): Promise<FaultProxy>;
  open<T extends { close(): Promise<unknown> }>(x: T): T;
  defer(close: () => Promise<unknown>): void;
  closeAll(): Promise<void>;
} {
  const closers: Array<() => Promise<unknown>> = [];
  return {
    async proxy() {
      const p = new FaultProxy(targetOf(url));
      await p.start();
      closers.push(() => p.close());
      return p;
    },
    open(x) {
      (x as unknown as { on?: (e: string, f: () => void) => void }).on?.('error', () => {});
      closers.push(() => x.close());
      return x;
    },
    defer(close) {
      closers.push(close);
    },
    async closeAll() {
      for (const c of closers.reverse()) await c().catch(() => {});
    },
  };
}
