// Suite `fairness`: echomq lanes against groupmq groups under a noisy neighbour.
// The queue gets a burst of `burst` jobs in lane "burst", then `quiet` jobs in each of two
// quiet lanes (added interleaved, after the burst). Only then does one worker start. We record
// the order of completions and report:
//   quiet served at  completion index (1-based) at which the last quiet job finished. With
//                    equal weights and a strict round robin it is about 3 × quiet; a FIFO
//                    queue would give burst + 2 × quiet.
//   first quiet at   completion index of the first quiet job (how long a newcomer waits).
//   jobs/s           all burst + 2 × quiet jobs, worker start to last completion.
// groupmq runs at most one job per group at a time (its ordering guarantee), so with three
// groups its worker never has more than three jobs in flight whatever its concurrency.
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { costTable, fmt, markdownTable, ratio, spread } from './lib/table.mjs';
import { echomq, groupmq } from './lib/libs.mjs';

const LIBS = [echomq, groupmq];
const QUIET = ['quiet-a', 'quiet-b'];

function burstJobs(n) {
  return Array.from({ length: n }, (_, i) => ({ data: { i, lane: 'burst' }, lane: 'burst' }));
}

function quietJobs(n) {
  const out = [];
  for (let i = 0; i < n; i++) for (const lane of QUIET) out.push({ data: { i, lane }, lane });
  return out;
}

async function once(ctx, lib, concurrency, tag) {
  const o = ctx.opts;
  await ctx.meter.flush();
  ctx.gc();
  const h = await lib.open(ctx.url, `bench-fair-${tag}`);
  try {
    await prefill(h, burstJobs(o.burst));
    await prefill(h, quietJobs(o.quiet));
    const quietTotal = QUIET.length * o.quiet;
    let quietDone = 0;
    let firstQuietAt;
    let quietServedAt;
    const m = await timeProcessing(ctx.meter, h, {
      concurrency,
      target: o.burst + quietTotal,
      onJob(data, index) {
        if (data?.lane === 'burst') return;
        quietDone++;
        if (quietDone === 1) firstQuietAt = index;
        if (quietDone === quietTotal) quietServedAt = index;
      },
    });
    return { ...m, firstQuietAt, quietServedAt };
  } finally {
    await h.close();
  }
}

export async function runFairness(ctx) {
  const o = ctx.opts;
  const name = (c) => `c=${c}`;
  for (const lib of LIBS) {
    ctx.log(`[fairness] warm-up ${lib.name}`);
    await once(ctx, lib, 10, 'warmup');
  }
  for (let rep = 1; rep <= o.runs; rep++) {
    for (const c of o.fairConcurrency) {
      for (const lib of LIBS) {
        const m = await once(ctx, lib, c, `${rep}`);
        ctx.results.add(name(c), lib.name, m);
        ctx.log(
          `[fairness] run ${rep}/${o.runs} ${name(c)} ${lib.name}: quiet served at ${m.quietServedAt}, ` +
            `first quiet at ${m.firstQuietAt}, ${Math.round(m.rate)} jobs/s${noise(m)}`,
        );
      }
    }
  }
  await ctx.meter.flush();

  const v = (c, lib, metric) => ctx.results.values(name(c), lib, metric);
  const rows = o.fairConcurrency.map((c) => [
    `${c}`,
    spread(v(c, 'echomq', 'quietServedAt')),
    spread(v(c, 'groupmq', 'quietServedAt')),
    spread(v(c, 'echomq', 'firstQuietAt')),
    spread(v(c, 'groupmq', 'firstQuietAt')),
    spread(v(c, 'echomq', 'rate')),
    spread(v(c, 'groupmq', 'rate')),
    ratio(v(c, 'echomq', 'rate'), v(c, 'groupmq', 'rate')),
  ]);
  const total = o.burst + 2 * o.quiet;
  return [
    `### fairness: echomq vs groupmq — ${fmt(o.burst)} burst jobs then ${o.quiet} in each of 2 quiet lanes; ` +
      `median (min–max) of ${o.runs} run(s)`,
    '',
    `Quiet lanes fully served at completion #: round robin ≈ ${fmt(3 * o.quiet)}, FIFO = ${fmt(total)} (of ${fmt(total)}).`,
    '',
    markdownTable(
      ['concurrency', 'echomq quiet served at', 'groupmq quiet served at', 'echomq first quiet at', 'groupmq first quiet at',
        'echomq jobs/s', 'groupmq jobs/s', 'echomq/groupmq jobs/s'],
      rows,
    ),
    '',
    '### fairness: cost per job (medians)',
    '',
    costTable(ctx.results, o.fairConcurrency.map(name), LIBS.map((l) => l.name), 'concurrency'),
  ].join('\n');
}
