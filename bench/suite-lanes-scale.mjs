// Suite `lanes-scale`: does echomq's claim stay cheap as the number of non-empty lanes grows?
// For each lane count L, the queue is filled round-robin across the lanes (job i → lane i mod L)
// with max(jobs, 2 × L) jobs, so every lane holds at least two jobs and stays in the ring for
// the whole window, then one worker (concurrency `laneConcurrency`) is timed to its `jobs`-th
// completion. Ideally the rate is flat: a claim touches the ring head, not every lane.
//
// When the largest row needs a bigger queue than the others, a control row runs the baseline
// lane count with that same bigger queue: it separates "many lanes" from "many keys in Redis".
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { costTable, fmt, markdownTable, ratio, ratioValue, spread, median, targetTable } from './lib/table.mjs';
import { echomq } from './lib/libs.mjs';

function laneJobs(total, lanes) {
  return Array.from({ length: total }, (_, i) => ({ data: { i }, lane: `l${i % lanes}` }));
}

function cases(o) {
  const list = o.lanes.map((lanes) => ({ name: `${lanes} lanes`, lanes, total: Math.max(o.jobs, 2 * lanes) }));
  const biggest = Math.max(...list.map((c) => c.total));
  if (biggest > list[0].total) {
    list.push({ name: `${o.lanes[0]} lanes, ${biggest} jobs (control)`, lanes: o.lanes[0], total: biggest, control: true });
  }
  return list;
}

async function once(ctx, c, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await echomq.open(ctx.url, `bench-lanes-${tag}`);
  try {
    const prefillRate = await prefill(h, laneJobs(c.total, c.lanes));
    const m = await timeProcessing(ctx.meter, h, { concurrency: ctx.opts.laneConcurrency, target: ctx.opts.jobs });
    return { ...m, prefillRate, added: c.total };
  } finally {
    await h.close();
  }
}

export async function runLanesScale(ctx) {
  const o = ctx.opts;
  const list = cases(o);
  ctx.log('[lanes-scale] warm-up');
  await once(ctx, { lanes: o.lanes[0], total: o.jobs }, 'warmup');
  for (let rep = 1; rep <= o.runs; rep++) {
    for (const c of list) {
      const m = await once(ctx, c, `${rep}`);
      ctx.results.add(c.name, 'echomq', m);
      ctx.log(`[lanes-scale] run ${rep}/${o.runs} ${c.name}: ${Math.round(m.rate)} jobs/s (prefill ${Math.round(m.prefillRate)} jobs/s)${noise(m)}`);
    }
  }
  await ctx.meter.flush();

  const base = ctx.results.values(list[0].name, 'echomq', 'rate');
  const most = list.filter((c) => !c.control).reduce((a, b) => (b.lanes > a.lanes ? b : a));
  const rows = list.map((c) => {
    const v = (metric) => ctx.results.values(c.name, 'echomq', metric);
    return [
      c.control ? `${fmt(c.lanes)} (control)` : fmt(c.lanes),
      fmt(c.total),
      spread(v('rate')),
      ratio(v('rate'), base),
      fmt(median(v('cmdsPerJob')), true),
      fmt(median(v('redisCpuUsPerJob')), true),
      spread(v('prefillRate')),
    ];
  });
  return [
    `### lanes-scale: echomq, one worker at concurrency ${o.laneConcurrency}, first ${o.jobs} completions; median (min–max) of ${o.runs} run(s)`,
    '',
    markdownTable(
      ['non-empty lanes', 'jobs in queue', 'jobs/s', `vs ${fmt(o.lanes[0])} lanes`, 'Redis cmds/job', 'Redis CPU µs/job', 'prefill addBulk jobs/s'],
      rows,
    ),
    '',
    '### lanes-scale: cost per job (medians)',
    '',
    costTable(ctx.results, list.map((c) => c.name), ['echomq'], 'lanes'),
    '',
    '### lanes-scale: target of the performance issue',
    '',
    targetTable([{
      target: `claims with ${fmt(most.lanes)} lanes vs ${fmt(o.lanes[0])} lanes`,
      measured: ratioValue(ctx.results.values(most.name, 'echomq', 'rate'), base),
      atLeast: 0.8,
      unit: '×',
    }]),
  ].join('\n');
}
