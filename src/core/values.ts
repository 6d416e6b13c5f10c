/** Small conversions of values read from Redis, shared by every part (one copy each). */

/**
 * A JSON field as stored by echomq: undefined when absent or empty, the parsed value, or the
 * raw string when it is not JSON (a value written by another tool stays readable).
 */
export function parseJson(s: string | undefined | null): unknown {
  if (s === undefined || s === null || s === '') return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/** Milliseconds of a Redis `TIME` reply ([seconds, microseconds]): the server clock every script uses. */
export function redisTimeMs(time: readonly [string | number, string | number]): number {
  return Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
}

/** The Redis server clock now, in ms (one `TIME` call). */
export async function redisNowMs(client: { time(): Promise<[string, string] | (string | number)[]> }): Promise<number> {
  const t = await client.time();
  return redisTimeMs([t[0]!, t[1]!]);
}
