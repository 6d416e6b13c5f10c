/**
 * The order in which the move back to BullMQ takes an echomq queue's ready jobs: BullMQ has one
 * line per queue (its `wait` list, then `prioritized`), echomq a sorted set per lane. The jobs of
 * all lanes are merged by priority, then by arrival stamp (the order one lane would serve them:
 * LIFO jobs ahead of their tier, as in echomq), read lane by lane in bounded pages.
 */
import type { RedisClient } from '../core/connection.js';
import type { QueueKeys } from '../core/keys.js';

/** A ready job in a lane: its priority and lane member (`<14 hex stamp><id>`). */
interface Entry {
  prio: number;
  member: string;
  cursor: Cursor;
}

interface Cursor {
  lane: string;
  buf: Entry[];
  /** Entries at the set's front already taken (moved ones leave the set; refused ones stay). */
  front: number;
  done: boolean;
}

const before = (a: Entry, b: Entry): boolean => a.prio < b.prio || (a.prio === b.prio && a.member < b.member);
const STAMP_LEN = 14;
const PAGE = 1000;

/** A binary heap of lane cursors by their first buffered entry. */
class Heap {
  private readonly a: Cursor[] = [];
  get size(): number {
    return this.a.length;
  }
  push(c: Cursor): void {
    const a = this.a;
    a.push(c);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i]!.buf[0]!, a[p]!.buf[0]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): Cursor | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l]!.buf[0]!, a[m]!.buf[0]!)) m = l;
        if (r < a.length && before(a[r]!.buf[0]!, a[m]!.buf[0]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** Every lane of the registry, read in pages. */
async function allLanes(client: RedisClient, keys: QueueKeys): Promise<string[]> {
  const out: string[] = [];
  for (let at = 0; ; at += PAGE) {
    const page = await client.zrange(keys.lanes, at, at + PAGE - 1);
    out.push(...page);
    if (page.length < PAGE) return out;
  }
}

export interface ReadyBatches {
  /** The next batch of job ids in order (empty when none is left). */
  next(): Promise<string[]>;
  /** After a batch ran: which of its ids stayed in echomq (refused). */
  settled(refused: ReadonlySet<string>, dry: boolean): void;
}

/**
 * The ready jobs of a queue in the order the move back gives them in BullMQ, `size` at a time.
 * A lane's page is read again only when its buffer is empty, after the batch that emptied it
 * ran, from the first entry not yet taken.
 */
export async function readyBatches(client: RedisClient, keys: QueueKeys, size: number): Promise<ReadyBatches> {
  const lanes = await allLanes(client, keys);
  const heap = new Heap();
  const waiting: Cursor[] = [];
  const pageSize = Math.max(10, Math.min(size, 100));

  async function fill(cs: Cursor[]): Promise<void> {
    for (let i = 0; i < cs.length; i += 500) {
      const chunk = cs.slice(i, i + 500);
      const pipe = client.pipeline();
      for (const c of chunk) {
        pipe.zrange(keys.laneBase + c.lane, c.front, c.front + pageSize - 1, 'WITHSCORES');
        pipe.hget(keys.lone, c.lane);
      }
      const res = (await pipe.exec()) ?? [];
      chunk.forEach((c, j) => {
        const flat = (res[2 * j]?.[1] ?? []) as string[];
        for (let k = 0; k + 1 < flat.length; k += 2) c.buf.push({ prio: Number(flat[k + 1]), member: flat[k]!, cursor: c });
        // A one-job lane keeps its job in the lone hash (`<prio>:<member>`) and has no set.
        const lone = res[2 * j + 1]?.[1] as string | null | undefined;
        if (lone && c.front === 0) {
          const at = lone.indexOf(':');
          c.buf.push({ prio: Number(lone.slice(0, at)), member: lone.slice(at + 1), cursor: c });
        }
        if (flat.length / 2 < pageSize) c.done = true;
        if (c.buf.length > 0) heap.push(c);
      });
    }
  }

  await fill(lanes.map((lane) => ({ lane, buf: [], front: 0, done: false })));

  let taken: Entry[] = [];
  return {
    async next() {
      if (waiting.length > 0) {
        const again = waiting.splice(0);
        await fill(again.filter((c) => !c.done));
      }
      taken = [];
      while (taken.length < size && heap.size > 0) {
        const c = heap.pop()!;
        const e = c.buf.shift()!;
        taken.push(e);
        c.front++;
        if (c.buf.length > 0) heap.push(c);
        else if (!c.done) {
          // Read on after this batch ran: the set's front changes with it.
          waiting.push(c);
          break;
        }
      }
      return taken.map((e) => e.member.slice(STAMP_LEN));
    },
    settled(refused, dry) {
      if (dry) return;
      for (const e of taken) if (!refused.has(e.member.slice(STAMP_LEN))) e.cursor.front--;
    },
  };
}
