/**
 * The dashboard's browser script, served as /app.js. Vanilla JavaScript kept in a string so the
 * build needs no bundler and no asset copying. Rule: user strings (queue, lane and job names,
 * data, errors, logs) are only ever put into the page with textContent or as SVG numbers,
 * never through innerHTML, so a name like `<img onerror=…>` shows as text.
 */
export const APP_JS = String.raw`'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var SVG = 'http://www.w3.org/2000/svg';
  var HIST = 80; // depth samples per lane for the sparkline (about 2 minutes at 1.5 s)
  var S = {
    config: null, queue: null, status: null, lanes: [], hist: new Map(), sort: { key: 'name', dir: 1 },
    lane: null, jobOffset: 0, jobLimit: 50, jobMore: false, jobId: null, job: null, token: '', busy: false
  };

  // A token may arrive in the fragment (never sent to the server); keep it for this tab only.
  var hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('token')) {
    sessionStorage.setItem('echomq.token', hash.get('token'));
    hash.delete('token');
    history.replaceState(null, '', location.pathname + location.search + (String(hash) ? '#' + String(hash) : ''));
  }
  S.token = sessionStorage.getItem('echomq.token') || '';
  if (hash.get('queue')) S.queue = hash.get('queue');

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); e.title = String(text); }
    if (cls) e.className = cls;
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    return e;
  }
  function enc(s) { return encodeURIComponent(s); }
  function qpath(rest) { return '/api/queues/' + enc(S.queue) + (rest || ''); }
  function time(ms) { return typeof ms === 'number' ? new Date(ms).toLocaleString() : '—'; }
  function ago(ms) {
    var s = Math.max(0, (Date.now() - ms) / 1000);
    return s < 60 ? Math.round(s) + 's ago' : s < 3600 ? Math.round(s / 60) + 'm ago' : s < 86400 ? (s / 3600).toFixed(1) + 'h ago' : (s / 86400).toFixed(1) + 'd ago';
  }

  function toast(text, bad) {
    var t = $('toast');
    t.textContent = text;
    t.className = bad ? 'bad' : '';
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, 4000);
  }

  function answer(r) {
    return r.json().catch(function () { return {}; }).then(function (body) {
      if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
      return body;
    });
  }
  function getJson(path) { return fetch(path, { headers: { Accept: 'application/json' } }).then(answer); }

  /** POSTs an action; resolves to the reply, or null after showing why it was refused. */
  function act(path, body, done) {
    var headers = { 'Content-Type': 'application/json', 'X-Echomq-Action': '1' };
    if (S.token) headers.Authorization = 'Bearer ' + S.token;
    return fetch(path, { method: 'POST', headers: headers, body: JSON.stringify(body || {}) }).then(answer).then(
      function (reply) { toast(done, false); refresh(); return reply; },
      function (err) { toast('Refused: ' + err.message, true); return null; }
    );
  }

  // ---- mode and token ----
  function showMode() {
    var mode = $('mode');
    if (!S.config) return;
    if (S.config.readOnly) { mode.textContent = 'read-only'; mode.className = 'badge'; }
    else if (S.token) { mode.textContent = 'actions enabled'; mode.className = 'badge ok'; }
    else { mode.textContent = 'token needed for actions'; mode.className = 'badge warn'; }
    $('tokenForm').hidden = S.config.readOnly;
    Array.prototype.forEach.call(document.querySelectorAll('button.action'), function (b) {
      if (b.id === 'jobRetry' || b.id === 'jobRemove') return; // these follow the job's state (renderJob)
      b.disabled = S.config.readOnly;
      b.title = S.config.readOnly ? 'read-only dashboard (start it with --token)' : '';
    });
  }
  $('tokenForm').addEventListener('submit', function (ev) {
    ev.preventDefault();
    S.token = $('tokenInput').value;
    $('tokenInput').value = '';
    if (S.token) sessionStorage.setItem('echomq.token', S.token); else sessionStorage.removeItem('echomq.token');
    showMode();
  });

  // ---- queues ----
  function renderQueues(data) {
    var body = $('queues').tBodies[0];
    var rows = data.queues.map(function (q) {
      var tr = document.createElement('tr');
      if (q.name === S.queue) tr.className = 'sel';
      tr.appendChild(el('td', q.name));
      tr.appendChild(el('td', q.paused ? 'paused' : 'running'));
      var c = q.counts;
      [c.waiting + c.prioritized + c.paused, c.active, c.delayed, c.failed, c.completed].forEach(function (n) {
        tr.appendChild(el('td', n, 'num'));
      });
      tr.addEventListener('click', function () { selectQueue(q.name); });
      return tr;
    });
    body.replaceChildren.apply(body, rows);
    $('noQueues').hidden = data.queues.length > 0;
  }

  function selectQueue(name) {
    S.queue = name; S.lane = null; S.hist = new Map(); S.jobOffset = 0; S.jobId = null;
    $('lanePanel').hidden = true; $('jobDetail').hidden = true; $('jobLane').value = '';
    history.replaceState(null, '', '#queue=' + enc(name));
    refresh();
  }

  function renderQueue(st) {
    S.status = st;
    $('queueBox').hidden = false;
    $('queueTitle').textContent = st.name;
    $('queueState').textContent = st.paused ? 'paused' : 'running';
    $('queueState').className = st.paused ? 'badge warn' : 'badge ok';
    $('queuePause').textContent = st.paused ? 'Resume queue' : 'Pause queue';
    var states = ['waiting', 'prioritized', 'paused', 'active', 'delayed', 'completed', 'failed'];
    Object.keys(st.counts).forEach(function (c) { if (states.indexOf(c) < 0 && st.counts[c] > 0) states.push(c); });
    var cards = states.map(function (c) {
      var d = el('div', null, 'card');
      d.appendChild(el('b', st.counts[c]));
      d.appendChild(el('span', c));
      return d;
    });
    $('counts').replaceChildren.apply($('counts'), cards);
    S.lanes = st.lanes;
    var seen = new Set();
    st.lanes.forEach(function (l) {
      seen.add(l.name);
      var h = S.hist.get(l.name) || [];
      h.push(l.depth);
      if (h.length > HIST) h.shift();
      S.hist.set(l.name, h);
    });
    S.hist.forEach(function (_, k) { if (!seen.has(k)) S.hist.delete(k); });
    $('laneNote').textContent = st.lanesTruncated ? '(first ' + st.lanes.length + ' lanes by name)' : '(' + st.lanes.length + ')';
    renderLanes();
  }

  // ---- lanes ----
  function sortValue(l, key) {
    if (key === 'name') return l.name;
    if (key === 'limit') return l.limit === null ? Infinity : l.limit;
    if (key === 'paused') return l.paused ? 1 : 0;
    if (key === 'rate') return l.rate ? l.rate.max / l.rate.duration : Infinity;
    return l[key];
  }
  function spark(values) {
    var s = svg('svg', { viewBox: '0 0 120 22', 'class': 'spark', preserveAspectRatio: 'none' });
    if (values.length < 2) return s;
    var max = Math.max.apply(null, values.concat([1]));
    var skip = HIST - values.length; // newest sample at the right edge
    var pts = values.map(function (v, i) {
      return ((skip + i) * 120 / (HIST - 1)).toFixed(1) + ',' + (21 - v / max * 20).toFixed(1);
    }).join(' ');
    s.appendChild(svg('polyline', { points: pts, fill: 'none', stroke: '#2563eb', 'stroke-width': 1.5 }));
    return s;
  }
  function renderLanes() {
    var key = S.sort.key, dir = S.sort.dir;
    var lanes = S.lanes.slice().sort(function (a, b) {
      var x = sortValue(a, key), y = sortValue(b, key);
      return (x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1) * dir;
    });
    var rows = lanes.map(function (l) {
      var tr = document.createElement('tr');
      if (S.lane === l.name) tr.className = 'sel';
      tr.dataset.lane = l.name;
      tr.appendChild(el('td', l.name));
      tr.appendChild(el('td', l.depth, 'num'));
      var sp = el('td'); sp.appendChild(spark(S.hist.get(l.name) || [])); tr.appendChild(sp);
      tr.appendChild(el('td', l.active, 'num'));
      tr.appendChild(el('td', l.weight, 'num'));
      tr.appendChild(el('td', l.limit === null ? '—' : l.limit, 'num'));
      tr.appendChild(el('td', l.paused ? 'yes' : 'no'));
      tr.appendChild(el('td', l.rate ? l.rate.max + ' / ' + l.rate.duration + ' ms' : '—'));
      tr.addEventListener('click', function () { openLane(l.name); });
      return tr;
    });
    var body = $('lanes').tBodies[0];
    body.replaceChildren.apply(body, rows);
    Array.prototype.forEach.call($('lanes').tHead.rows[0].cells, function (th) {
      th.className = th.dataset.key === key ? (dir > 0 ? 'asc' : 'desc') : '';
    });
    var cur = currentLane();
    if (cur) $('lanePause').textContent = cur.paused ? 'Resume lane' : 'Pause lane';
  }
  Array.prototype.forEach.call($('lanes').tHead.rows[0].cells, function (th) {
    if (!th.dataset.key) return;
    th.addEventListener('click', function () {
      var key = th.dataset.key;
      S.sort = { key: key, dir: S.sort.key === key ? -S.sort.dir : (key === 'name' ? 1 : -1) };
      renderLanes();
    });
  });
  function currentLane() {
    for (var i = 0; i < S.lanes.length; i++) if (S.lanes[i].name === S.lane) return S.lanes[i];
    return null;
  }
  function openLane(name) {
    S.lane = name;
    var l = currentLane();
    $('laneName').textContent = name;
    $('laneWeight').value = l ? l.weight : 1;
    $('laneLimit').value = l && l.limit !== null ? l.limit : '';
    $('lanePanel').hidden = false;
    renderLanes();
  }
  function lanePath(action) { return qpath('/lanes/' + enc(S.lane) + '/' + action); }
  $('laneClose').addEventListener('click', function () { S.lane = null; $('lanePanel').hidden = true; renderLanes(); });
  $('lanePause').addEventListener('click', function () {
    var l = currentLane();
    var pause = !(l && l.paused);
    act(lanePath(pause ? 'pause' : 'resume'), {}, (pause ? 'Paused' : 'Resumed') + ' lane ' + S.lane);
  });
  $('laneWeightSet').addEventListener('click', function () {
    act(lanePath('weight'), { value: Number($('laneWeight').value) }, 'Weight set');
  });
  $('laneLimitSet').addEventListener('click', function () {
    var v = $('laneLimit').value;
    act(lanePath('limit'), { value: v === '' ? null : Number(v) }, v === '' ? 'Limit removed' : 'Limit set');
  });
  $('laneJobs').addEventListener('click', function () { $('jobLane').value = S.lane; S.jobOffset = 0; loadJobs(); });

  // ---- queue actions ----
  $('queuePause').addEventListener('click', function () {
    var pause = !(S.status && S.status.paused);
    act(qpath('/' + (pause ? 'pause' : 'resume')), {}, pause ? 'Queue paused' : 'Queue resumed');
  });
  $('retryFailed').addEventListener('click', function () {
    if (!confirm('Retry every failed job of this queue?')) return;
    act(qpath('/retry-failed'), {}, 'Failed jobs retried');
  });

  // ---- throughput chart ----
  function renderChart(tp) {
    var chart = $('chart');
    var step = 20, n = tp.completed.length / step, ok = [], bad = []; // 20 s averages
    for (var i = 0; i < n; i++) {
      var c = 0, f = 0;
      for (var k = 0; k < step; k++) { c += tp.completed[i * step + k]; f += tp.failed[i * step + k]; }
      ok.push(c / step); bad.push(f / step);
    }
    var max = Math.max(1, Math.max.apply(null, ok), Math.max.apply(null, bad));
    var line = function (vals) {
      return vals.map(function (v, i) { return (i * 720 / (n - 1)).toFixed(1) + ',' + (128 - v / max * 118).toFixed(1); }).join(' ');
    };
    var nodes = [
      svg('line', { x1: 0, y1: 128.5, x2: 720, y2: 128.5, stroke: '#dde1e7' }),
      svg('polyline', { points: line(ok), fill: 'none', stroke: '#16a34a', 'stroke-width': 1.5 }),
      svg('polyline', { points: line(bad), fill: 'none', stroke: '#dc2626', 'stroke-width': 1.5 })
    ];
    [['60 min ago', 4, 'start'], ['30 min', 360, 'middle'], ['now', 716, 'end']].forEach(function (a) {
      var t = svg('text', { x: a[1], y: 139, 'font-size': 9, fill: '#6b7280', 'text-anchor': a[2] });
      t.textContent = a[0];
      nodes.push(t);
    });
    var top = svg('text', { x: 4, y: 10, 'font-size': 9, fill: '#6b7280' });
    top.textContent = max.toFixed(max < 10 ? 1 : 0) + ' jobs/s';
    nodes.push(top);
    chart.replaceChildren.apply(chart, nodes);
    $('rateNow').textContent = '— now ' + ok[n - 1].toFixed(1) + ' ok/s, ' + bad[n - 1].toFixed(1) + ' failed/s';
  }

  // ---- jobs ----
  function loadJobs() {
    if (!S.queue) return Promise.resolve();
    var state = $('jobState').value, lane = $('jobLane').value;
    if (!state) S.jobOffset = 0;
    var qs = new URLSearchParams({ limit: String(S.jobLimit), offset: String(S.jobOffset) });
    if (state) qs.set('state', state);
    if (lane) qs.set('lane', lane);
    return getJson(qpath('/jobs?' + qs)).then(renderJobs, function (e) { toast(e.message, true); });
  }
  function renderJobs(r) {
    S.jobMore = r.more;
    var rows = r.jobs.map(function (j) {
      var tr = document.createElement('tr');
      if (j.id === S.jobId) tr.className = 'sel';
      [j.id, j.name, j.lane, j.state].forEach(function (v) { tr.appendChild(el('td', v)); });
      tr.appendChild(el('td', j.priority, 'num'));
      tr.appendChild(el('td', j.attemptsMade, 'num'));
      tr.appendChild(el('td', ago(j.timestamp)));
      tr.appendChild(el('td', j.failedReason || ''));
      tr.addEventListener('click', function () { openJob(j.id); });
      return tr;
    });
    var body = $('jobs').tBodies[0];
    body.replaceChildren.apply(body, rows);
    var state = $('jobState').value;
    $('jobPrev').disabled = !state || S.jobOffset === 0;
    $('jobNext').disabled = !state || !r.more;
    $('jobPage').textContent = r.jobs.length ? (S.jobOffset + 1) + '–' + (S.jobOffset + r.jobs.length) : 'no jobs';
  }
  $('jobState').addEventListener('change', function () { S.jobOffset = 0; loadJobs(); });
  $('jobLane').addEventListener('change', function () { S.jobOffset = 0; loadJobs(); });
  $('jobPrev').addEventListener('click', function () { S.jobOffset = Math.max(0, S.jobOffset - S.jobLimit); loadJobs(); });
  $('jobNext').addEventListener('click', function () { S.jobOffset += S.jobLimit; loadJobs(); });

  function openJob(id) {
    S.jobId = id;
    getJson(qpath('/jobs/' + enc(id))).then(renderJob, function (e) { toast(e.message, true); });
  }
  function renderJob(j) {
    S.job = j;
    $('jobDetail').hidden = false;
    $('jobId').textContent = j.id;
    var dl = $('jobFields');
    var items = [['name', j.name], ['state', j.state], ['lane', j.lane], ['priority', j.priority],
      ['attempts', j.attemptsMade + ' made, ' + j.attemptsStarted + ' started, ' + j.stalledCounter + ' stalls'],
      ['progress', JSON.stringify(j.progress)], ['created', time(j.timestamp)], ['processed', time(j.processedOn)],
      ['finished', time(j.finishedOn)], ['return value', j.returnvalue === undefined || (j.returnvalue === null && j.state !== 'completed') ? '—' : JSON.stringify(j.returnvalue)]];
    var nodes = [];
    items.forEach(function (it) { nodes.push(el('dt', it[0])); nodes.push(el('dd', it[1])); });
    dl.replaceChildren.apply(dl, nodes);
    $('jobData').textContent = JSON.stringify(j.data, null, 2);
    $('jobError').textContent = j.failedReason ? j.failedReason + '\n' + (j.stacktrace || []).join('\n') : '—';
    $('jobLogs').textContent = j.logs.length ? j.logs.join('\n') : '—';
    $('jobRetry').disabled = S.config.readOnly || (j.state !== 'failed' && j.state !== 'completed');
    $('jobRemove').disabled = S.config.readOnly || j.state === 'active';
  }
  $('jobClose').addEventListener('click', function () { S.jobId = null; $('jobDetail').hidden = true; });
  $('jobRetry').addEventListener('click', function () {
    var id = S.jobId;
    act(qpath('/jobs/' + enc(id) + '/retry'), {}, 'Job retried').then(function (r) { if (r) openJob(id); });
  });
  $('jobRemove').addEventListener('click', function () {
    if (!confirm('Remove this job?')) return;
    act(qpath('/jobs/' + enc(S.jobId) + '/remove'), {}, 'Job removed').then(function (r) {
      if (r) { S.jobId = null; $('jobDetail').hidden = true; }
    });
  });

  // ---- polling ----
  function refresh() {
    if (S.busy) return Promise.resolve();
    S.busy = true;
    var work = [getJson('/api/queues').then(renderQueues)];
    if (S.queue) {
      work.push(getJson(qpath()).then(renderQueue));
      work.push(getJson(qpath('/throughput')).then(renderChart));
      work.push(loadJobs());
    }
    return Promise.all(work).then(function () {
      $('conn').textContent = 'live'; $('conn').className = 'badge ok';
    }, function (e) {
      $('conn').textContent = 'error: ' + e.message; $('conn').className = 'badge bad';
    }).then(function () { S.busy = false; showMode(); });
  }

  getJson('/api/config').then(function (c) {
    S.config = c;
    showMode();
    refresh();
    setInterval(refresh, 1500);
  }, function (e) { $('conn').textContent = 'error: ' + e.message; $('conn').className = 'badge bad'; });
})();
`;
