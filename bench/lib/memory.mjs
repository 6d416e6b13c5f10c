// Redis memory held by waiting jobs: the `used_memory` delta from INFO memory, and where those
// bytes sit (MEMORY USAGE per key family).

/** `used_memory` from INFO memory: bytes the allocator has handed out to Redis. */
export async function usedMemory(client) {
  const text = await client.info('memory');
  return Number(/used_memory:(\d+)/.exec(text)?.[1] ?? NaN);
}

/** Keys with runs of digits folded, so every job's hash falls into one family (`…:job:#`). */
function familyOf(key) {
  return key.replace(/\d+/g, '#');
}

/**
 * Groups every key in the database by family and estimates each family's bytes: all keys of a
 * small family are measured (MEMORY USAGE … SAMPLES 0, exact), a large family by its first
 * `sample` keys scaled to its size. Returns [{ family, keys, bytes }], largest first.
 */
export async function memoryByFamily(client, sample = 200) {
  const families = new Map();
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) {
      const f = familyOf(k);
      if (!families.has(f)) families.set(f, { count: 0, sampled: [] });
      const entry = families.get(f);
      entry.count++;
      if (entry.sampled.length < sample) entry.sampled.push(k);
    }
  } while (cursor !== '0');
  const out = [];
  for (const [family, { count, sampled }] of families) {
    const pipe = client.pipeline();
    for (const k of sampled) pipe.memory('USAGE', k, 'SAMPLES', 0);
    const replies = await pipe.exec();
    const sum = replies.reduce((s, [err, v]) => s + (err ? 0 : Number(v ?? 0)), 0);
    out.push({ family, keys: count, bytes: (sum / sampled.length) * count, first: sampled[0] });
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

/**
 * What one job's hash holds: for the family with the most keys, when it is a hash, the first
 * key's encoding, MEMORY USAGE, and each field with its value's length. Undefined otherwise
 * (bee-queue keeps every job in one hash, one JSON value per job).
 */
export async function oneJobHash(client, families) {
  const f = families.reduce((a, b) => (b.keys > a.keys ? b : a), families[0]);
  if (!f || f.keys < 2 || (await client.type(f.first)) !== 'hash') return undefined;
  const fields = Object.entries(await client.hgetall(f.first)).map(([name, value]) => ({ name, bytes: Buffer.byteLength(value) }));
  return {
    key: f.first,
    encoding: await client.object('ENCODING', f.first),
    bytes: Number(await client.memory('USAGE', f.first, 'SAMPLES', 0)),
    fields,
  };
}
