// Script calls go out through sendFlat (src/scripts/send-flat.ts), which hands ioredis a flat
// string array instead of letting call() copy and convert the arguments: the bytes written
// must be the ones call() writes, and clients it cannot serve keep call().
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { sendFlat, sendsFlat } from '../src/scripts/send-flat.js';

/** A client that records each command's RESP text instead of sending it. */
function recorder(opts: Record<string, unknown> = {}) {
  const client = new Redis({ lazyConnect: true, ...opts });
  const written: string[] = [];
  client.sendCommand = ((cmd: { toWritable(s: unknown): string | Buffer; resolve(v: unknown): void; promise: Promise<unknown> }) => {
    written.push(String(cmd.toWritable(undefined)));
    cmd.resolve('OK');
    return cmd.promise;
  }) as never;
  return { client, written };
}

describe('sendFlat', () => {
  it('writes the same command as call(), numbers as decimal strings', async () => {
    const { client, written } = recorder();
    const keys = ['bull:{q}:meta', 'bull:{q}:ring'];
    const args = [20, 1, 4, '', 'bench', '{"i":1,"s":"é✓"}', 0, -2, 1.5, 'req@1'];
    expect(await client.call('FCALL', 'emq_add', keys.length, ...keys, ...args)).toBe('OK');
    expect(await sendFlat(client, 'FCALL', 'emq_add', keys, args)).toBe('OK');
    await client.evalsha('abc', keys.length, ...keys, ...args);
    await sendFlat(client, 'evalsha', 'abc', keys, args);
    expect(written).toHaveLength(4);
    expect(written[1]).toBe(written[0]);
    expect(written[3]).toBe(written[2]);
    client.disconnect();
  });

  it('is not used for clients with a key prefix or auto-pipelining', () => {
    const plain = recorder().client;
    const prefixed = recorder({ keyPrefix: 'p:' }).client;
    const piped = recorder({ enableAutoPipelining: true }).client;
    expect([sendsFlat(plain), sendsFlat(prefixed), sendsFlat(piped)]).toEqual([true, false, false]);
    for (const c of [plain, prefixed, piped]) c.disconnect();
  });
});
