// Summaries (median, min, max over repetitions) and markdown tables.

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function summarize(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

const intFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/**
 * Numbers sized for reading: thousands separators for big ones, a few significant digits for
 * small ones. Whole numbers (counts, indices) print without decimals unless `real` is set.
 */
export function fmt(x, real = false) {
  if (x === undefined || x === null || Number.isNaN(x)) return '–';
  const a = Math.abs(x);
  if (a >= 100 || (!real && Number.isInteger(x))) return intFormat.format(x);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
}

/** "median (min–max)", or just the value when there was one run. */
export function spread(values) {
  if (!values || values.length === 0) return '–';
  const s = summarize(values);
  if (s.n === 1) return fmt(s.median);
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
}

/** Ratio of two medians, "1.23×"; '–' when either side is missing. */
export function ratio(a, b) {
  if (!a?.length || !b?.length) return '–';
  const r = median(a) / median(b);
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : '–';
}

export function markdownTable(headers, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const align = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  return [line(headers), line(align), ...rows.map(line)].join('\n');
}

/**
 * Collects measurements by (case, library) so repetitions of one case line up, and pulls one
 * metric out as an array for the summaries above.
 */
export class Results {
  constructor() {
    this.map = new Map();
  }

  add(caseName, lib, measurement) {
    const key = `${caseName}\u0000${lib}`;
    if (!this.map.has(key)) this.map.set(key, []);
    this.map.get(key).push(measurement);
  }

  values(caseName, lib, metric) {
    return (this.map.get(`${caseName}\u0000${lib}`) ?? []).map((m) => m[metric]).filter((v) => v !== undefined);
  }

  toJSON() {
    const out = {};
    for (const [key, list] of this.map) {
      const [caseName, lib] = key.split('\u0000');
      (out[caseName] ??= {})[lib] = list;
    }
    return out;
  }
}

const COST_METRICS = [
  ['cmdsPerJob', 'Redis cmds/job'],
  ['scriptsPerJob', 'script calls/job'],
  ['sentPerJob', 'sent cmds/job'],
  ['redisCpuUsPerJob', 'Redis CPU µs/job'],
  ['nodeCpuUsPerJob', 'Node CPU µs/job'],
];

/** Per-job costs, medians over the runs, one row per case and library. */
export function costTable(results, cases, libs, caseHeader = 'case') {
  const rows = [];
  for (const c of cases) {
    for (const lib of libs) {
      if (results.values(c, lib, 'rate').length === 0) continue;
      rows.push([c, lib, ...COST_METRICS.map(([m]) => fmt(median(results.values(c, lib, m)), true))]);
    }
  }
  return markdownTable([caseHeader, 'library', ...COST_METRICS.map(([, h]) => h)], rows);
}

/**
 * Where Redis' work goes: for every case and library, the commands it executed per job
 * (from the last run), most frequent first, with Redis' own µs per job for each.
 */
export function commandTable(results, top = 40) {
  const rows = [];
  for (const [key, list] of results.map) {
    const [caseName, lib] = key.split('\u0000');
    const cmds = list.at(-1)?.commands;
    if (!cmds) continue;
    const cell = Object.entries(cmds)
      .sort((a, b) => b[1].calls - a[1].calls)
      .slice(0, top)
      .map(([name, c]) => `${name} ${fmt(c.calls, true)} (${fmt(c.usec, true)} µs)`)
      .join(', ');
    rows.push([caseName, lib, cell]);
  }
  return markdownTable(['case', 'library', 'Redis commands per job, last run: calls (µs inside Redis)'], rows);
}

/**
 * The performance issue's targets as a checklist. Each row: { target, measured, atLeast? ,
 * atMost?, unit? } where `measured` is a number (a ratio or a value) or undefined when the case
 * did not run. A target is met when measured ≥ atLeast (or ≤ atMost).
 */
export function targetTable(rows) {
  const show = (x, unit) => (unit === '×' ? `${x.toFixed(2)}×` : unit === '%' ? `${x >= 0 ? '+' : ''}${x.toFixed(1)}%` : `${fmt(x, true)}${unit ? ` ${unit}` : ''}`);
  const out = rows.map((r) => {
    const need = r.atLeast !== undefined ? `≥ ${show(r.atLeast, r.unit)}` : `≤ ${show(r.atMost, r.unit)}`;
    if (r.measured === undefined || !Number.isFinite(r.measured)) return [r.target, need, '–', '–'];
    const met = r.atLeast !== undefined ? r.measured >= r.atLeast : r.measured <= r.atMost;
    return [r.target, need, show(r.measured, r.unit), met ? 'met' : '**not met**'];
  });
  return markdownTable(['target', 'required', 'measured', 'verdict'], out);
}

/** median(a) / median(b), or undefined when either side is missing. */
export function ratioValue(a, b) {
  if (!a?.length || !b?.length) return undefined;
  const r = median(a) / median(b);
  return Number.isFinite(r) ? r : undefined;
}
