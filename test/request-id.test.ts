// Request ids carry their send time on the Redis clock; a local clock that steps back (fake
// timers in a test, a clock reset) must not give a send time the script refuses as expired.
import { describe, expect, it, vi } from 'vitest';
import { newRequestId } from '../src/scripts/request-id.js';
import { client } from './helpers.js';

describe('request ids and the local clock', () => {
  it('sends no time while the local clock is behind the one the offset was read with', async () => {
    const redis = client();
    try {
      newRequestId(redis); // starts reading the offset
      await new Promise((r) => setTimeout(r, 100));
      const stamped = newRequestId(redis);
      expect(stamped).toMatch(/@\d+$/);
      const sent = Number(stamped.split('@')[1]);
      const [s, us] = await redis.time();
      expect(Math.abs(Number(s) * 1000 + Math.floor(Number(us) / 1000) - sent)).toBeLessThan(1000);
      vi.useFakeTimers({ now: 1000, toFake: ['Date'] });
      expect(newRequestId(redis)).not.toMatch(/@/);
      vi.useRealTimers();
    } finally {
      vi.useRealTimers();
      redis.disconnect();
    }
  });
});
