// MONITOR for tests that assert what a client sent or what a script ran. Two races of ioredis'
// monitor mode are closed here: MONITOR starts only on a client that finished its handshake
// (a monitor line read together with MONITOR's own reply is taken for a reply and fails with
// "Command queue state error"), and flush() waits for a marker command to come through
// instead of sleeping, so every command sent before it has been seen.
import type { Redis } from 'ioredis';

export interface Monitor {
  /** Every command seen since the monitor started (callers may empty it): its arguments and its source ('lua' inside scripts). */
  readonly seen: Array<{ args: string[]; source: string }>;
  /** Resolves once every command sent before the call is in `seen` (it does not clear it). */
  flush(): Promise<void>;
  stop(): void;
}

let markers = 0;

/**
 * Monitors the server `client` talks to. client: a plain client of the server; the caller must
 * leave no other client of that server mid-handshake while this starts (await their ready).
 */
export async function startMonitor(client: Redis): Promise<Monitor> {
  if (client.status !== 'ready') await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  const monitor = await client.monitor();
  const seen: Array<{ args: string[]; source: string }> = [];
  const waiting = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (args[0]?.toLowerCase() === 'echo' && waiting.has(args[1] ?? '')) {
      waiting.get(args[1]!)!();
      waiting.delete(args[1]!);
      return;
    }
    seen.push({ args, source });
  });
  return {
    seen,
    async flush(): Promise<void> {
      // MONITOR lists commands in the order the server ran them: once the marker shows, every
      // command that ran before it has been delivered.
      const marker = `monitor-flush-${process.pid}-${++markers}`;
      const arrived = new Promise<void>((resolve) => waiting.set(marker, resolve));
      await client.echo(marker);
      await arrived;
    },
    stop(): void {
      monitor.disconnect();
    },
  };
}
