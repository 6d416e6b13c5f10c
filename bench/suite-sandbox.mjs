// Suite `sandbox`: sandboxed processors, echomq against BullMQ's. One worker whose processor is
// a file (lib/noop-processor.mjs, an empty async function) drains `sandboxJobs` pre-filled jobs
// at each of `sandboxConcurrency`, in child processes and in worker threads
// (useWorkerThreads); timed like core's process rows, from the worker's construction (so the
// children's start-up is inside the window, for both libraries) to the last completion;
// finished jobs are removed at once. The libraries alternate case by case, the first one
// rotating every repetition. Ratios are echomq's median over BullMQ's.
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { costTable, markdownTable, ratio, ratioValue, spread, targetTable } from './lib/table.mjs';
import { echomq, bullmq } from './lib/libs.mjs';

const LIBS = [echomq, bullmq];
const PROCESSOR = new URL('./lib/noop-processor.mjs', import.meta.url);
// Children get no execArgv: the runner's --expose-gc is refused by worker threads when passed
// explicitly (BullMQ passes the parent's execArgv), and the children need none.
const MODES = [
  { name: 'processes', workerOpts: { useWorkerThreads: false, workerForkOptions: { execArgv: [] } } },
  { name: 'threads', workerOpts: { useWorkerThreads: true, workerThreadsOptions: { execArgv: [] } } },
];

const jobs = (n) => Array.from({ length: n }, (_, i) => ({ data: { i } }));

function cases(o) {
  const list = [];
  for (const mode of MODES) {
    for (const c of o.sandboxConcurrency) {
      list.push({
        name: `${mode.name} c=${c}`,
        mode: mode.name,
        concurrency: c,
        async run(meter, h, n) {
          await prefill(h, jobs(n));
          // BullMQ takes the processor file as a path string; echomq takes both (a URL too).
          return timeProcessing(meter, h, { concurrency: c, target: n, processorFile: PROCESSOR.pathname, workerOpts: mode.workerOpts });
        },
      });
    }
  }
  return list;
}

async function once(ctx, lib, c, n, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await lib.open(ctx.url, `bench-sandbox-${tag}`);
  try {
    return await c.run(ctx.meter, h, n);
  } finally {
    await h.close();
  }
}

export async function runSandbox(ctx) {
  const o = ctx.opts;
  const list = cases(o);
  for (const lib of LIBS) {
    for (const mode of MODES) {
      ctx.log(`[sandbox] warm-up ${lib.name} ${mode.name}`);
      const warm = list.find((c) => c.mode === mode.name);
      await once(ctx, lib, warm, Math.min(o.sandboxJobs, 500), 'warmup');
    }
  }
  for (let rep = 1; rep <= o.runs; rep++) {
    const order = LIBS.map((_, i) => LIBS[(i + rep - 1) % LIBS.length]);
    for (const c of list) {
      for (const lib of order) {
        const m = await once(ctx, lib, c, o.sandboxJobs, `${rep}`);
        ctx.results.add(c.name, lib.name, m);
        ctx.log(`[sandbox] run ${rep}/${o.runs} ${c.name} ${lib.name}: ${Math.round(m.rate)} jobs/s${noise(m)}`);
      }
    }
  }
  await ctx.meter.flush();

  const names = list.map((c) => c.name);
  const rate = (n, lib) => ctx.results.values(n, lib, 'rate');
  const rows = names.map((n) => [n, ...LIBS.map((l) => spread(rate(n, l.name))), ratio(rate(n, 'echomq'), rate(n, 'bullmq'))]);
  const targets = list.map((c) => ({
    target: `${c.name} vs BullMQ`,
    measured: ratioValue(rate(c.name, 'echomq'), rate(c.name, 'bullmq')),
    atLeast: c.concurrency === 1 ? 1 : 1.2,
    unit: '×',
  }));
  return [
    `### sandbox: sandboxed noop processors, echomq vs BullMQ — jobs/s, median (min–max) of ${o.runs} run(s); ${o.sandboxJobs} jobs per case`,
    '',
    markdownTable(['case', ...LIBS.map((l) => `${l.name} jobs/s`), 'echomq/bullmq'], rows),
    '',
    '### sandbox: cost per job (medians)',
    '',
    costTable(ctx.results, names, LIBS.map((l) => l.name)),
    '',
    '### sandbox: targets of the sandboxed-processors issue',
    '',
    targetTable(targets),
  ].join('\n');
}


