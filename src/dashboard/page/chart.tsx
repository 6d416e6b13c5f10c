/// <reference lib="dom" />
/** Browser side: the throughput chart, completed and failed jobs per second over the last hour. */
import type { ThroughputReply } from '../api.js';

const STEP = 20; // seconds per point

/** The series as 20-second averages, scaled to the highest. */
export function Chart({ tp }: { tp: ThroughputReply }) {
  const n = tp.completed.length / STEP;
  const ok: number[] = [];
  const bad: number[] = [];
  for (let i = 0; i < n; i++) {
    let c = 0;
    let f = 0;
    for (let k = 0; k < STEP; k++) {
      c += tp.completed[i * STEP + k];
      f += tp.failed[i * STEP + k];
    }
    ok.push(c / STEP);
    bad.push(f / STEP);
  }
  const max = Math.max(1, ...ok, ...bad);
  const line = (vals: number[]) => vals.map((v, i) => ((i * 720) / (n - 1)).toFixed(1) + ',' + (128 - (v / max) * 118).toFixed(1)).join(' ');
  return (
    <>
      <h3>Throughput, last hour <span class="legend"><i class="ok" />completed <i class="bad" />failed
        <span id="rateNow"> — now {ok[n - 1].toFixed(1)} ok/s, {bad[n - 1].toFixed(1)} failed/s</span></span></h3>
      <svg id="chart" viewBox="0 0 720 140" preserveAspectRatio="none" role="img" aria-label="completed and failed jobs per second">
        <line x1={0} y1={128.5} x2={720} y2={128.5} stroke="#dde1e7" />
        <polyline points={line(ok)} fill="none" stroke="#16a34a" stroke-width={1.5} />
        <polyline points={line(bad)} fill="none" stroke="#dc2626" stroke-width={1.5} />
        <text x={4} y={139} font-size={9} fill="#6b7280" text-anchor="start">60 min ago</text>
        <text x={360} y={139} font-size={9} fill="#6b7280" text-anchor="middle">30 min</text>
        <text x={716} y={139} font-size={9} fill="#6b7280" text-anchor="end">now</text>
        <text x={4} y={10} font-size={9} fill="#6b7280">{max.toFixed(max < 10 ? 1 : 0)} jobs/s</text>
      </svg>
    </>
  );
}
