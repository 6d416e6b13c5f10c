/**
 * The dashboard page and its style. Static: everything dynamic is drawn by the page's script
 * (page/*.ts, served as /app.js) with textContent, so no user string ever passes through an
 * HTML parser.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>echomq</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1>echomq</h1>
  <span id="conn" class="badge">connecting…</span>
  <span id="mode" class="badge"></span>
  <form id="tokenForm" class="token" hidden>
    <input id="tokenInput" type="password" placeholder="token for actions" autocomplete="off">
    <button type="submit">Use token</button>
  </form>
</header>
<main>
  <section id="queuesBox">
    <h2>Queues</h2>
    <table id="queues" class="grid">
      <thead><tr><th>Queue</th><th>State</th><th class="num" title="waiting + prioritized + paused">Ready</th><th class="num">Active</th><th class="num">Delayed</th><th class="num">Failed</th><th class="num">Done</th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="noQueues" class="muted" hidden>No queues under this prefix yet.</p>
  </section>

  <section id="queueBox" hidden>
    <div class="titlebar">
      <h2 id="queueTitle"></h2>
      <span id="queueState" class="badge"></span>
      <button id="queuePause" class="action"></button>
      <button id="retryFailed" class="action">Retry all failed</button>
    </div>
    <div id="counts" class="cards"></div>

    <h3>Throughput, last hour <span class="legend"><i class="ok"></i>completed <i class="bad"></i>failed <span id="rateNow"></span></span></h3>
    <svg id="chart" viewBox="0 0 720 140" preserveAspectRatio="none" role="img" aria-label="completed and failed jobs per second"></svg>

    <h3>Lanes <span id="laneNote" class="muted"></span></h3>
    <table id="lanes" class="grid sortable">
      <thead><tr>
        <th data-key="name">Lane</th><th data-key="depth">Depth</th><th>Depth, last 2 min</th><th data-key="active">Active</th>
        <th data-key="weight">Weight</th><th data-key="limit">Limit</th><th data-key="paused">Paused</th><th data-key="rate">Rate limit</th>
      </tr></thead>
      <tbody></tbody>
    </table>
    <div id="lanePanel" class="panel" hidden>
      <strong>Lane <span id="laneName"></span></strong>
      <button id="lanePause" class="action"></button>
      <label>Weight <input id="laneWeight" type="number" min="1" step="1"></label>
      <button id="laneWeightSet" class="action">Set</button>
      <label>Limit <input id="laneLimit" type="number" min="0" step="1" placeholder="none"></label>
      <button id="laneLimitSet" class="action">Set</button>
      <button id="laneJobs">Show its jobs</button>
      <button id="laneClose">Close</button>
    </div>

    <h3>Jobs</h3>
    <div class="filters">
      <label>State <select id="jobState">
        <option value="">all</option><option>waiting</option><option>prioritized</option><option>paused</option>
        <option>waiting-children</option><option>active</option><option>delayed</option><option>failed</option><option>completed</option>
      </select></label>
      <label>Lane <input id="jobLane" placeholder="any lane"></label>
      <button id="jobPrev">‹ Prev</button><button id="jobNext">Next ›</button>
      <span id="jobPage" class="muted"></span>
    </div>
    <table id="jobs" class="grid">
      <thead><tr><th>Id</th><th>Name</th><th>Lane</th><th>State</th><th>Priority</th><th>Attempts</th><th>Created</th><th>Reason</th></tr></thead>
      <tbody></tbody>
    </table>
    <div id="jobDetail" class="panel" hidden>
      <div class="titlebar"><strong>Job <span id="jobId"></span></strong>
        <button id="jobRetry" class="action">Retry</button>
        <button id="jobRemove" class="action">Remove</button>
        <button id="jobClose">Close</button></div>
      <dl id="jobFields"></dl>
      <h4>Data</h4><pre id="jobData"></pre>
      <h4>Error</h4><pre id="jobError"></pre>
      <h4>Logs</h4><pre id="jobLogs"></pre>
    </div>
  </section>
</main>
<div id="toast" role="status" hidden></div>
</body>
</html>
`;

export const PAGE_CSS = `
:root { --bg:#f7f8fa; --fg:#1d2330; --muted:#6b7280; --line:#dde1e7; --ok:#16a34a; --bad:#dc2626; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, Segoe UI, Roboto, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; align-items: center; gap: 12px; padding: 10px 20px; background: #111827; color: #fff; }
header h1 { font-size: 18px; margin: 0 12px 0 0; letter-spacing: .5px; }
main { display: grid; grid-template-columns: minmax(460px, 1fr) 3fr; gap: 20px; padding: 20px; }
@media (max-width: 1100px) { main { grid-template-columns: 1fr; } }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; min-width: 0; }
h2 { font-size: 16px; margin: 0 0 10px; } h3 { font-size: 14px; margin: 18px 0 8px; } h4 { margin: 10px 0 4px; }
.badge { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #374151; color: #fff; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.warn { background: #b45309; }
.muted { color: var(--muted); font-weight: normal; }
.grid { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
.grid th, .grid td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; max-width: 260px; overflow: hidden; text-overflow: ellipsis; }
#queues th, #queues td { padding: 5px 5px; } #queues td:first-child { max-width: 150px; }
.grid th { font-size: 12px; color: var(--muted); font-weight: 600; }
.grid td.num, .grid th.num { text-align: right; }
.grid tbody tr { cursor: pointer; } .grid tbody tr:hover { background: #f1f5ff; } .grid tr.sel { background: #e0e9ff; }
.sortable th[data-key] { cursor: pointer; user-select: none; }
.sortable th.asc::after { content: " ▲"; } .sortable th.desc::after { content: " ▼"; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; min-width: 96px; }
.card b { display: block; font-size: 20px; } .card span { font-size: 12px; color: var(--muted); }
.titlebar { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; }
.titlebar h2 { margin: 0; }
#chart { width: 100%; height: 140px; background: #fbfcfe; border: 1px solid var(--line); border-radius: 6px; }
.legend { font-weight: normal; font-size: 12px; color: var(--muted); margin-left: 10px; }
.legend i { display: inline-block; width: 10px; height: 3px; margin: 0 4px 3px 8px; } .legend i.ok { background: var(--ok); } .legend i.bad { background: var(--bad); }
.panel { margin-top: 10px; padding: 10px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fafbff; display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
#jobDetail { display: block; } #jobDetail[hidden], #lanePanel[hidden] { display: none; }
.panel input { width: 90px; }
pre { background: #0f172a; color: #e2e8f0; padding: 8px 10px; border-radius: 6px; overflow: auto; max-height: 260px; margin: 0; white-space: pre-wrap; word-break: break-word; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; } dt { color: var(--muted); } dd { margin: 0; }
.filters { display: flex; gap: 10px; align-items: center; margin-bottom: 8px; flex-wrap: wrap; }
button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 5px; background: #fff; cursor: pointer; }
button.action { border-color: var(--accent); color: var(--accent); }
button:disabled { opacity: .45; cursor: not-allowed; }
.token input { padding: 3px 6px; }
#toast { position: fixed; right: 20px; bottom: 20px; max-width: 480px; padding: 10px 14px; border-radius: 6px; background: #111827; color: #fff; }
#toast.bad { background: var(--bad); }
svg.spark { width: 120px; height: 22px; vertical-align: middle; }
`;
