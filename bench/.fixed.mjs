import { Redis } from 'ioredis';
import { loadScript } from '../dist/scripts/loader.js';
import { queueKeys } from '../dist/keys.js';
const r = new Redis(process.env.REDIS_URL);
const keys = queueKeys('fixed');
for (const name of ['complete', 'add', 'claim', 'extendLeases']) {
  const s = loadScript(name);
  await r.script('LOAD', s.source);
  const k = s.keys.map((n) => keys[n]);
  const args = name === 'complete' ? ['nojob', '1', 'null', 0, 1000, 100] : name === 'add' ? ['0'] : name === 'claim' ? [0, 1000] : [1000];
  await r.config('RESETSTAT');
  for (let b = 0; b < 20; b++) { const p = r.pipeline(); for (let i = 0; i < 1000; i++) p.evalsha(s.sha, k.length, ...k, ...args); await p.exec(); }
  const info = await r.info('commandstats');
  console.log(name.padEnd(14), 'keys', k.length, 'source bytes', s.source.length, /cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(info)[1], 'us/call');
}
r.disconnect();
