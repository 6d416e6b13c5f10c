/**
 * The dashboard page and its style. The HTML is a shell: everything is drawn by the page's
 * script (Preact views of ./page, bundled into app.js), which puts user strings into the page
 * only as text. Links are relative, so the page works under any base path.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>echomq</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<div id="app"><header><span class="brand">echomq</span><span id="conn" class="badge">connecting…</span></header></div>
</body>
</html>
`;

export const PAGE_CSS = `
:root { --bg:#f7f8fa; --fg:#1d2330; --muted:#6b7280; --line:#dde1e7; --ok:#16a34a; --bad:#dc2626; --warn:#b45309; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, Segoe UI, Roboto, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; align-items: center; gap: 12px; padding: 10px 20px; background: #111827; color: #fff; flex-wrap: wrap; min-width: 0; }
header .brand { font-size: 18px; font-weight: 700; color: #fff; text-decoration: none; letter-spacing: .5px; margin-right: 4px; }
header .crumb { max-width: 40ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#conn { max-width: 50ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
main { padding: 16px 20px; min-width: 0; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; min-width: 0; max-width: 100%; }
h2 { font-size: 16px; margin: 0; } h3 { font-size: 14px; margin: 16px 0 8px; } h4 { margin: 12px 0 4px; font-size: 13px; }
a { color: var(--accent); }
.badge { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #374151; color: #fff; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.warn { background: var(--warn); }
.pill { display: inline-block; font-size: 12px; padding: 0 7px; border-radius: 9px; margin-right: 4px; border: 1px solid; }
.pill.bad { color: var(--bad); border-color: #fca5a5; background: #fef2f2; } .pill.warn { color: var(--warn); border-color: #fcd34d; background: #fffbeb; }
.pill.ok { color: var(--ok); border-color: #86efac; background: #f0fdf4; }
.muted { color: var(--muted); font-weight: normal; } .bad-text { color: var(--bad); }
.scroll { overflow-x: auto; max-width: 100%; }
.grid { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; table-layout: auto; }
.grid th, .grid td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
.grid td.cut, .cut { max-width: 22ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.grid td.reason { max-width: 28ch; } .grid td.flags { max-width: 36ch; } .grid td.id { max-width: 14ch; }
.grid th { font-size: 12px; color: var(--muted); font-weight: 600; }
.grid td.num, .grid th.num { text-align: right; }
.grid tbody tr { cursor: pointer; } .grid tbody tr:hover { background: #f1f5ff; } .grid tr.sel { background: #e0e9ff; }
.grid tr.attn-bad td:first-child { box-shadow: inset 3px 0 var(--bad); } .grid tr.attn-warn td:first-child { box-shadow: inset 3px 0 var(--warn); }
.grid tfoot td { font-weight: 600; border-bottom: none; }
.grid .check { width: 28px; }
.grid tr.shard td { color: var(--muted); font-size: 13px; } .grid tr.sharded { cursor: default; } .grid td.name .pill { margin-left: 6px; }
td.state.failed { color: var(--bad); } td.state.active { color: var(--accent); } td.state.completed { color: var(--ok); }
.sortable th[data-key] { cursor: pointer; user-select: none; }
.sortable th.asc::after { content: " ▲"; } .sortable th.desc::after { content: " ▼"; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 5px 12px; min-width: 90px; color: inherit; text-decoration: none; }
.card b { display: block; font-size: 19px; } .card span { font-size: 12px; color: var(--muted); }
.card.sel { border-color: var(--accent); background: #eef3ff; } .card.bad b { color: var(--bad); }
.titlebar { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; min-width: 0; }
.titlebar.actions { margin-top: 10px; }
#chart { width: 100%; height: 140px; background: #fbfcfe; border: 1px solid var(--line); border-radius: 6px; display: block; }
.legend { font-weight: normal; font-size: 12px; color: var(--muted); margin-left: 10px; }
.legend i { display: inline-block; width: 10px; height: 3px; margin: 0 4px 3px 8px; } .legend i.ok { background: var(--ok); } .legend i.bad { background: var(--bad); }
.tabs { display: flex; gap: 4px; margin: 16px 0 10px; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
.tabs a { padding: 6px 12px; text-decoration: none; color: var(--muted); border-bottom: 2px solid transparent; text-transform: capitalize; }
.tabs a[aria-selected="true"] { color: var(--fg); border-bottom-color: var(--accent); font-weight: 600; }
.panel { margin: 8px 0; padding: 8px 12px; border: 1px solid var(--line); border-radius: 6px; background: #fafbff; display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
.panel.danger { border-color: #fca5a5; background: #fef2f2; }
.panel input { width: 90px; }
.filters { display: flex; gap: 10px; align-items: center; margin-bottom: 8px; flex-wrap: wrap; }
.filters form { display: flex; gap: 6px; align-items: center; }
.filters input { width: 150px; }
button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 5px; background: #fff; cursor: pointer; }
button.action { border-color: var(--accent); color: var(--accent); }
button.danger { border-color: var(--bad); color: var(--bad); }
button:disabled { opacity: .45; cursor: not-allowed; }
button:focus-visible, a:focus-visible, input:focus-visible, select:focus-visible, tr:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
input, select { font: inherit; padding: 2px 6px; }
.token input { padding: 3px 6px; }
.drawer { position: fixed; top: 0; right: 0; bottom: 0; width: min(560px, 100vw); background: #fff; border-left: 1px solid var(--line);
  box-shadow: -8px 0 24px rgba(0,0,0,.12); padding: 14px 16px; overflow-y: auto; z-index: 10; }
.drawer .close { margin-left: auto; }
pre { background: #0f172a; color: #e2e8f0; padding: 8px 10px; border-radius: 6px; overflow: auto; max-height: 260px; margin: 0; white-space: pre-wrap; word-break: break-word; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 14px; margin: 10px 0; } dt { color: var(--muted); }
dd { margin: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
ul.tree { margin: 4px 0; padding-left: 18px; }
#toast { position: fixed; left: 20px; bottom: 20px; max-width: 480px; padding: 10px 14px; border-radius: 6px; background: #111827; color: #fff; z-index: 20; }
#toast.bad { background: var(--bad); }
svg.spark { width: 120px; height: 22px; vertical-align: middle; display: block; }
`;
