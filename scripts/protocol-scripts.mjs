// Prints docs/protocol.md's script reference from the headers of src/scripts/*.lua: per script
// its purpose, how it is called, its KEYS in order, its ARGV as a table (one row per `[n]`
// position of the header), its reply, status codes and events. test/protocol.test.ts parses the
// page and the headers and requires the same KEYS and ARGV rows for every script.
//
// A header is the comment block a script opens with. `-- KEYS:`, `-- ARGV:`, `-- Returns:`,
// `-- Errors…:` and `-- Events:` start a part; lines indented by three spaces (`--   …`) continue
// it; any other comment line is a note, shown with the purpose.
//
//   node scripts/protocol-scripts.mjs          print the reference (markdown)
//   node scripts/protocol-scripts.mjs --write  put it into docs/protocol.md (between the
//                                              "<!-- scripts:begin -->" and "<!-- scripts:end -->" markers)
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'src', 'scripts');
export const PROTOCOL = join(root, 'docs', 'protocol.md');
const BEGIN = '<!-- scripts:begin -->';
const END = '<!-- scripts:end -->';

/** An ARGV position marker: [1], [3..], [9 + 3i], [a], [a + 14], [b + 20 ..], [e + 1]. */
const MARKER = /\[((?:\d+|[a-e])(?:\s*(?:\+|\.\.)[^\]]*)?)\]/g;

/** Depth of parentheses at each index of text (a marker inside parentheses refers, it starts no row). */
function depths(text) {
  const out = new Array(text.length);
  let d = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') d++;
    out[i] = d;
    if (text[i] === ')') d = Math.max(0, d - 1);
  }
  return out;
}

/** Where a row's text hands over to the next group's introduction: ", then …" / "; then …" outside parentheses. */
function groupStart(text) {
  const d = depths(text);
  for (const m of text.matchAll(/[,;]\s+then\b/g)) if (d[m.index] === 0) return m.index;
  return -1;
}

/**
 * The ARGV text split at its position markers: rows [{ pos, text }], one per position, in order;
 * text before the first marker is `lead`. A marker inside parentheses is a reference, not a row.
 * The introduction of a repeated group after a row (", then m records of 15 fields, … at a = …:")
 * becomes a row of its own with pos '' (shown as "then"), so each position row holds only its
 * argument's description.
 */
export function argvRows(text) {
  const rows = [];
  const d = depths(text);
  const marks = [...text.matchAll(MARKER)].filter((m) => d[m.index] === 0);
  const lead = marks.length ? text.slice(0, marks[0].index).trim() : text.trim();
  marks.forEach((m, i) => {
    const end = i + 1 < marks.length ? marks[i + 1].index : text.length;
    let body = text.slice(m.index + m[0].length, end).trim().replace(/[,;]$/, '').trim();
    let group = '';
    const g = groupStart(body);
    if (g >= 0) {
      group = body.slice(g + 1).trim().replace(/^then,?\s+/, '');
      body = body.slice(0, g).trim();
    }
    rows.push({ pos: m[1].replace(/\s+/g, ' '), text: body });
    if (group) rows.push({ pos: '', text: group });
  });
  return { lead, rows };
}

/** The header of one script: purpose, notes, keys, argv, returns, errors, events (texts joined by spaces). */
export function parseHeader(name, source) {
  const lines = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('--') || line.startsWith('--!')) break;
    lines.push(line);
  }
  const parts = { purpose: [], notes: [], keys: [], argv: [], returns: [], errors: [], events: [] };
  let cur = 'purpose';
  for (const line of lines) {
    const tag = line.match(/^-- (KEYS|ARGV|Returns|Errors[^:]*|Events):\s?(.*)$/);
    if (tag) {
      cur = { KEYS: 'keys', ARGV: 'argv', Returns: 'returns', Events: 'events' }[tag[1]] ?? 'errors';
      parts[cur].push(tag[1].startsWith('Errors') && tag[1] !== 'Errors' ? `${tag[1].slice(7)} ${tag[2]}` : tag[2]);
      continue;
    }
    const body = line.replace(/^--\s?/, '');
    if (/^--\s{3}/.test(line) || cur === 'purpose') parts[cur].push(body.trim());
    else {
      cur = 'notes';
      parts.notes.push(body.trim());
    }
  }
  const join1 = (xs) => xs.join(' ').replace(/\s+/g, ' ').trim();
  const purpose = join1(parts.purpose).replace(new RegExp(`^${name}:\\s*`), '');
  const keys = join1(parts.keys).split(',').map((s) => s.trim()).filter(Boolean);
  return {
    name, purpose, notes: join1(parts.notes), keys, argv: argvRows(join1(parts.argv)),
    returns: join1(parts.returns), errors: join1(parts.errors), events: join1(parts.events),
  };
}

export function scriptNames() {
  return readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)).sort();
}

export function headers() {
  return scriptNames().map((n) => parseHeader(n, readFileSync(join(dir, `${n}.lua`), 'utf8')));
}

const cell = (s) => s.replace(/\|/g, '\\|');

/** The markdown reference; `library` names the transitions called with FCALL (loader.ts LIBRARY_TRANSITIONS). */
export function scriptSections(library) {
  const out = [];
  for (const h of headers()) {
    out.push(`### \`${h.name}\``, '', h.purpose + (h.notes ? ` ${h.notes}` : ''), '');
    out.push(`- **Called with**: ${library.includes(h.name) ? `\`FCALL emq_<tag>_${h.name}\` (in the library), or \`EVALSHA\` of its script` : '`EVALSHA` of its script (not in the library)'}`);
    out.push(`- **KEYS** (${h.keys.length}): ${h.keys.map((k) => `\`${k}\``).join(', ')}`);
    if (h.argv.lead) out.push(`- **ARGV**: ${h.argv.lead}`);
    out.push('', '| ARGV | argument and encoding |', '|---|---|');
    for (const r of h.argv.rows) out.push(r.pos ? `| \`[${r.pos}]\` | ${cell(r.text)} |` : `| then | ${cell(r.text)} |`);
    if (h.argv.rows.length === 0) out.push('| – | none |');
    out.push('');
    out.push(`- **Reply**: ${h.returns}`);
    out.push(`- **Status codes**: ${h.errors}`);
    out.push(`- **Events**: ${h.events}`, '');
  }
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { LIBRARY_TRANSITIONS } = await import(join(root, 'dist', 'scripts', 'loader.js'));
  const text = scriptSections(LIBRARY_TRANSITIONS);
  if (process.argv.includes('--write')) {
    const page = readFileSync(PROTOCOL, 'utf8');
    const from = page.indexOf(BEGIN);
    const to = page.indexOf(END);
    if (from < 0 || to < from) throw new Error(`docs/protocol.md: the ${BEGIN} … ${END} markers were not found`);
    writeFileSync(PROTOCOL, page.slice(0, from + BEGIN.length) + '\n' + text + '\n' + page.slice(to));
  } else process.stdout.write(text);
}
