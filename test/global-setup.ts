// Starts one throwaway redis-server for the whole run (or uses REDIS_URL) and hands its URL to
// the tests. Every test uses its own queue names, so files can share it.
import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper without types
import { ensureRedis } from '../scripts/redis-server.mjs';
// @ts-expect-error plain ESM helper without types
import { ensureChromium } from '../scripts/chromium.mjs';

let stop: (() => Promise<void>) | undefined;

export default async function setup(project: TestProject) {
  // The dashboard page, bundled once here with esbuild (before anything is started) so a page
  // that does not build fails the run at once with esbuild's message; each test process
  // bundles it again in memory when a dashboard first serves it.
  const { pageScript } = await import('../src/dashboard/bundle.js');
  await pageScript();
  const redis = await ensureRedis();
  stop = redis.stop;
  project.provide('redisUrl', redis.url);
  // The browser tests need Debian's Chromium: installed here when missing and we may (root on
  // Debian), otherwise the reason is printed once and those tests say it when they skip.
  const browser = ensureChromium() as { path: string | null; reason: string };
  if (!browser.path) console.error(`[echomq] browser tests will be skipped: ${browser.reason}`);
  project.provide('chromium', browser);
  return async () => {
    await stop?.();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    chromium: { path: string | null; reason: string };
  }
}
