// Starts one throwaway redis-server for the whole run (or uses REDIS_URL) and hands its URL to
// the tests. Every test uses its own queue names, so files can share it.
import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper without types
import { ensureRedis } from '../scripts/redis-server.mjs';

let stop: (() => Promise<void>) | undefined;

export default async function setup(project: TestProject) {
  const redis = await ensureRedis();
  stop = redis.stop;
  project.provide('redisUrl', redis.url);
  return async () => {
    await stop?.();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}
