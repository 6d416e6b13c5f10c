// Suite `core`: echomq against BullMQ on the three hot paths a queue lives on.
//   add      single adds, `inflight` calls pending at a time (a busy web tier)
//   addBulk  `batches` sequential bulk adds of `bulk` jobs each
//   process  one worker drains `jobs` pre-filled noop jobs at each concurrency; timed from the
//            worker's construction to the last completion. Finished jobs are removed at once
//            (removeOnComplete: true) by both libraries, so neither pays for retention.
import { inParallel } from './lib/meter.mjs';
import { prefill, timeProcessing } from './lib/steps.mjs';
import { costTable, markdownTable, ratio, spread } from './lib/table.mjs';
import { echomq, bullmq } from './lib/libs.mjs';

const LIBS = [echomq, bullmq];

function jobs(n) {
  return Array.from({ length: n }, (_, i) => ({ data: { i } }));
}

function cases(o) {
  const list = [
    {
      name: `add (${o.inflight} in flight)`,
      async run(meter, h) {
        const window = await meter.begin();
        await inParallel(o.jobs, o.inflight, (i) => h.add({ data: { i } }));
        return window.end(o.jobs);
      },
    },
    {
      name: `addBulk (${o.bulk} × ${o.batches})`,
      async run(meter, h) {
        const batches = Array.from({ length: o.batches }, () => jobs(o.bulk));
        const window = await meter.begin();
        for (const b of batches) await h.addBulk(b);
        return window.end(o.bulk * o.batches);
      },
    },
  ];
  for (const c of o.concurrency) {
    list.push({
      name: `process c=${c}`,
      async run(meter, h) {
        await prefill(h, jobs(o.jobs));
        return timeProcessing(meter, h, { concurrency: c, target: o.jobs });
      },
    });
  }
  return list;
}

/** One case against one library on an empty Redis. */
async function once(ctx, lib, c, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await lib.open(ctx.url, `bench-core-${tag}`);
  try {
    return await c.run(ctx.meter, h);
  } finally {
    await h.close();
  }
}

export async function runCore(ctx) {
  const o = ctx.opts;
  const list = cases(o);
  // Warm-up: loads scripts and lets the JIT settle so the first timed run is not penalised.
  for (const lib of LIBS) {
    ctx.log(`[core] warm-up ${lib.name}`);
    const warm = cases({ ...o, jobs: Math.min(o.jobs, 1000), batches: 1, concurrency: [10] });
    for (const c of warm) await once(ctx, lib, c, 'warmup');
  }
  for (let rep = 1; rep <= o.runs; rep++) {
    for (const c of list) {
      for (const lib of LIBS) {
        const m = await once(ctx, lib, c, `${rep}`);
        ctx.results.add(c.name, lib.name, m);
        ctx.log(`[core] run ${rep}/${o.runs} ${c.name} ${lib.name}: ${Math.round(m.rate)} jobs/s`);
      }
    }
  }
  await ctx.meter.flush();

  const names = list.map((c) => c.name);
  const rows = names.map((n) => [
    n,
    spread(ctx.results.values(n, 'echomq', 'rate')),
    spread(ctx.results.values(n, 'bullmq', 'rate')),
    ratio(ctx.results.values(n, 'echomq', 'rate'), ctx.results.values(n, 'bullmq', 'rate')),
  ]);
  return [
    `### core: echomq vs BullMQ — throughput, jobs/s, median (min–max) of ${o.runs} run(s); ${o.jobs} jobs for add and process`,
    '',
    markdownTable(['case', 'echomq jobs/s', 'bullmq jobs/s', 'echomq/bullmq'], rows),
    '',
    '### core: cost per job (medians)',
    '',
    costTable(ctx.results, names, LIBS.map((l) => l.name)),
  ].join('\n');
}
