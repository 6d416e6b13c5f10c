/** Browser side: the throughput chart, completed and failed jobs per second over the last hour. */
import type { ThroughputReply } from '../api.js';
import { $, svg } from './dom.js';

/** Draws the series as 20-second averages, scaled to the highest. */
export function renderChart(tp: ThroughputReply): void {
  const chart = $('chart');
  const step = 20;
  const n = tp.completed.length / step;
  const ok: number[] = [];
  const bad: number[] = [];
  for (let i = 0; i < n; i++) {
    let c = 0;
    let f = 0;
    for (let k = 0; k < step; k++) {
      c += tp.completed[i * step + k];
      f += tp.failed[i * step + k];
    }
    ok.push(c / step);
    bad.push(f / step);
  }
  const max = Math.max(1, Math.max(...ok), Math.max(...bad));
  const line = (vals: number[]) => vals.map((v, i) => (i * 720 / (n - 1)).toFixed(1) + ',' + (128 - v / max * 118).toFixed(1)).join(' ');
  const nodes: SVGElement[] = [
    svg('line', { x1: 0, y1: 128.5, x2: 720, y2: 128.5, stroke: '#dde1e7' }),
    svg('polyline', { points: line(ok), fill: 'none', stroke: '#16a34a', 'stroke-width': 1.5 }),
    svg('polyline', { points: line(bad), fill: 'none', stroke: '#dc2626', 'stroke-width': 1.5 }),
  ];
  const labels: [string, number, string][] = [['60 min ago', 4, 'start'], ['30 min', 360, 'middle'], ['now', 716, 'end']];
  labels.forEach(([text, x, anchor]) => {
    const t = svg('text', { x, y: 139, 'font-size': 9, fill: '#6b7280', 'text-anchor': anchor });
    t.textContent = text;
    nodes.push(t);
  });
  const top = svg('text', { x: 4, y: 10, 'font-size': 9, fill: '#6b7280' });
  top.textContent = max.toFixed(max < 10 ? 1 : 0) + ' jobs/s';
  nodes.push(top);
  chart.replaceChildren(...nodes);
  $('rateNow').textContent = '— now ' + ok[n - 1].toFixed(1) + ' ok/s, ' + bad[n - 1].toFixed(1) + ' failed/s';
}
