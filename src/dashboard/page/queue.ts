/** Browser side: the selected queue's panel (title, state, counts) and its queue-wide actions. */
import { $, el } from './dom.js';
import { renderLanes } from './lanes.js';
import { act } from './requests.js';
import { HIST, S, qpath } from './state.js';
import type { QueueReply } from '../api.js';

/** States always shown as cards, in this order; others appear after them when non-zero. */
const CARD_STATES = ['waiting', 'prioritized', 'paused', 'active', 'delayed', 'completed', 'failed'];

export function renderQueue(st: QueueReply): void {
  S.status = st;
  $('queueBox').hidden = false;
  $('queueTitle').textContent = st.name;
  $('queueState').textContent = st.paused ? 'paused' : 'running';
  $('queueState').className = st.paused ? 'badge warn' : 'badge ok';
  $('queuePause').textContent = st.paused ? 'Resume queue' : 'Pause queue';
  const counts: Record<string, number> = st.counts;
  const states = CARD_STATES.slice();
  Object.keys(counts).forEach((c) => {
    if (states.indexOf(c) < 0 && counts[c] > 0) states.push(c);
  });
  const cards = states.map((c) => {
    const d = el('div', null, 'card');
    d.appendChild(el('b', counts[c]));
    d.appendChild(el('span', c));
    return d;
  });
  $('counts').replaceChildren(...cards);
  S.lanes = st.lanes;
  // Each poll adds one depth sample per lane; lanes gone from the reply lose their history.
  const seen = new Set<string>();
  st.lanes.forEach((l) => {
    seen.add(l.name);
    const h = S.hist.get(l.name) || [];
    h.push(l.depth);
    if (h.length > HIST) h.shift();
    S.hist.set(l.name, h);
  });
  S.hist.forEach((_, k) => {
    if (!seen.has(k)) S.hist.delete(k);
  });
  $('laneNote').textContent = st.lanesTruncated ? '(first ' + st.lanes.length + ' lanes by name)' : '(' + st.lanes.length + ')';
  renderLanes();
}

export function wireQueueActions(): void {
  $('queuePause').addEventListener('click', () => {
    const pause = !(S.status && S.status.paused);
    act(qpath('/' + (pause ? 'pause' : 'resume')), {}, pause ? 'Queue paused' : 'Queue resumed');
  });
  $('retryFailed').addEventListener('click', () => {
    if (!confirm('Retry every failed job of this queue?')) return;
    act(qpath('/retry-failed'), {}, 'Failed jobs retried');
  });
}
