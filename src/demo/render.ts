/** Terminal rendering of the demo's lane table: pure string building. */

export interface LaneRow {
  lane: string;
  weight: number;
  total: number;
  done: number;
  /** Ready jobs still waiting in the lane. */
  depth: number;
  /** Completion index at which the lane finished, if it has. */
  finishedAt?: number;
}

const WIDTH = 36;

function bar(done: number, total: number): string {
  const full = total === 0 ? WIDTH : Math.round((done / total) * WIDTH);
  return '█'.repeat(full) + '░'.repeat(WIDTH - full);
}

export function renderBars(rows: readonly LaneRow[], completed: number, all: number): string {
  const pad = Math.max(...rows.map((r) => r.lane.length));
  const out = rows.map((r) => {
    const share = completed === 0 ? 0 : (100 * r.done) / completed;
    const fin = r.finishedAt ? `  done at #${r.finishedAt}` : '';
    return `   ${r.lane.padEnd(pad)}  w=${r.weight}  ${bar(r.done, r.total)} ${String(r.done).padStart(5)}/${String(r.total).padEnd(5)} waiting ${String(r.depth).padStart(5)}  share ${share.toFixed(0).padStart(3)}%${fin}`;
  });
  out.push(`   processed ${completed}/${all}`);
  return out.join('\n') + '\n';
}
