// Suite `lanes-shallow`: does a lane per user cost more than a few deep lanes? The same `jobs`
// jobs are spread over lanes of equal depth (10 lanes of jobs/10 down to one job per lane), so
// in the shallow rows every lane empties on its turn: each job then pays whatever a lane pays to
// leave the ring, be forgotten and be admitted again (lanes-scale keeps its lanes deep and does
// not see this). One worker drains the queue at each concurrency; ratios are to the 10-lane row
// at the same concurrency. The add rows time `batches` addBulk calls of `bulk` jobs, all into
// one lane or each job into a lane of its own that did not exist before (new names per call).
// Within a repetition the lane counts alternate case by case, so a slow spell on a shared
// machine hits all rows alike.
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { costTable, fmt, markdownTable, median, ratio, ratioValue, spread, targetTable } from './lib/table.mjs';
import { echomq } from './lib/libs.mjs';

function laneJobs(total, lanes) {
  return Array.from({ length: total }, (_, i) => ({ data: { i }, lane: `u${i % lanes}` }));
}

function processCases(o) {
  const list = [];
  for (const c of o.concurrency) {
    for (const lanes of o.shallowLanes) {
      list.push({
        name: `${lanes} lanes c=${c}`,
        lanes,
        concurrency: c,
        async run(meter, h) {
          await prefill(h, laneJobs(o.jobs, lanes));
          return timeProcessing(meter, h, { concurrency: c, target: o.jobs });
        },
      });
    }
  }
  return list;
}

function addCases(o) {
  const bulkInto = (lanes) => ({
    name: `addBulk into ${lanes} lane${lanes === 1 ? '' : 's'}`,
    lanes,
    async run(meter, h) {
      // New lane names in every call: each job of a many-lanes call opens a lane.
      const batches = Array.from({ length: o.batches }, (_, b) =>
        Array.from({ length: o.bulk }, (_, i) => ({ data: { i }, lane: `b${b}-u${i % lanes}` })));
      const window = await meter.begin();
      for (const batch of batches) await h.addBulk(batch);
      return window.end(o.bulk * o.batches);
    },
  });
  return [bulkInto(1), bulkInto(o.bulk)];
}

async function once(ctx, c, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await echomq.open(ctx.url, `bench-shallow-${tag}`);
  try {
    return await c.run(ctx.meter, h);
  } finally {
    await h.close();
  }
}

export async function runLanesShallow(ctx) {
  const o = ctx.opts;
  const proc = processCases(o);
  const adds = addCases(o);
  const list = [...adds, ...proc];
  ctx.log('[lanes-shallow] warm-up');
  const warm = { ...o, jobs: Math.min(o.jobs, 2000), concurrency: [10], batches: 1 };
  for (const c of [...addCases(warm), ...processCases(warm)]) await once(ctx, c, 'warmup');
  for (let rep = 1; rep <= o.runs; rep++) {
    for (const c of list) {
      const m = await once(ctx, c, `${rep}`);
      ctx.results.add(c.name, 'echomq', m);
      ctx.log(`[lanes-shallow] run ${rep}/${o.runs} ${c.name}: ${Math.round(m.rate)} jobs/s${noise(m)}`);
    }
  }
  await ctx.meter.flush();

  const rate = (name) => ctx.results.values(name, 'echomq', 'rate');
  const v = (name, metric) => median(ctx.results.values(name, 'echomq', metric));
  const baseOf = (c) => proc.find((b) => b.concurrency === c.concurrency && b.lanes === o.shallowLanes[0]).name;
  const procRows = proc.map((c) => [
    fmt(c.concurrency),
    fmt(c.lanes),
    fmt(o.jobs / c.lanes),
    spread(rate(c.name)),
    ratio(rate(c.name), rate(baseOf(c))),
    fmt(v(c.name, 'cmdsPerJob'), true),
    fmt(v(c.name, 'redisCpuUsPerJob'), true),
  ]);
  const addRows = adds.map((c) => [
    c.name,
    spread(rate(c.name)),
    ratio(rate(c.name), rate(adds[0].name)),
    fmt(v(c.name, 'cmdsPerJob'), true),
    fmt(v(c.name, 'redisCpuUsPerJob'), true),
  ]);
  const most = o.shallowLanes[o.shallowLanes.length - 1];
  const target = (c, atLeast) => {
    const row = proc.find((p) => p.lanes === most && p.concurrency === c);
    if (!row) return undefined;
    return {
      target: `${fmt(most)} lanes vs ${fmt(o.shallowLanes[0])} lanes, c=${c}`,
      measured: ratioValue(rate(row.name), rate(baseOf(row))),
      atLeast,
      unit: '×',
    };
  };
  return [
    `### lanes-shallow: echomq, one worker draining ${fmt(o.jobs)} jobs in lanes of equal depth; median (min–max) of ${o.runs} run(s)`,
    '',
    markdownTable(
      ['concurrency', 'lanes', 'jobs per lane', 'jobs/s', `vs ${fmt(o.shallowLanes[0])} lanes`, 'Redis cmds/job', 'Redis CPU µs/job'],
      procRows,
    ),
    '',
    `### lanes-shallow: addBulk, ${o.batches} calls of ${fmt(o.bulk)} jobs, new lanes in every call`,
    '',
    markdownTable(['case', 'jobs/s', 'vs one lane', 'Redis cmds/job', 'Redis CPU µs/job'], addRows),
    '',
    '### lanes-shallow: cost per job (medians)',
    '',
    costTable(ctx.results, list.map((c) => c.name), ['echomq']),
    '',
    '### lanes-shallow: targets of the lanes issue',
    '',
    targetTable([
      target(50, 0.9),
      target(10, 0.85),
      { target: `addBulk into ${fmt(o.bulk)} lanes vs one lane`, measured: ratioValue(rate(adds[1].name), rate(adds[0].name)), atLeast: 0.9, unit: '×' },
    ].filter(Boolean)),
  ].join('\n');
}
