// console.js: the game day console. It reads the live stream
// (/api/stream, Server-Sent Events) and drives the game day through the
// JSON API; everything it shows comes from the server, which owns the
// faults: closing this page reverts nothing.
import { Chart, esc } from './chart.js';

const $ = id => document.getElementById(id);

// S is what the page knows.
const S = {
  frames: [],          // one per second of run clock, by index t
  server: new Map(),   // "name\x00endpoint" → [[t, v]]
  endpoints: [],       // server endpoints, in the order first seen
  events: [],
  state: null,         // the last status, load, active faults, timeline
  stateAt: 0,          // performance.now() when state came
  types: [],
  status: null,        // GET /api/status
  ended: null,
};

// api calls the JSON API; it resolves to {ok, status, data}.
async function api(method, path, body) {
  // X-Llmchaos-Console: the server refuses a change that does not say it
  // comes from this page (no other page can send it).
  const init = { method, credentials: 'same-origin', headers: { 'X-Llmchaos-Console': '1' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    return { ok: false, status: 0, data: { error: 'the console server does not answer: ' + e.message } };
  }
  let data = {};
  try { data = await res.json(); } catch (e) { /* no body */ }
  return { ok: res.ok, status: res.status, data };
}

// show says what happened to the last action (bad: in red).
function show(text, bad) {
  const m = $('msg');
  m.hidden = false;
  m.className = 'msg' + (bad ? ' bad' : '');
  m.textContent = text;
}

// failure turns an API error into one line: the refusal, the problems.
function failure(what, r) {
  const d = r.data || {};
  if (d.refused) return `${what} refused: ${d.refused}`;
  if (d.problems && d.problems.length) return `${what}: ` + d.problems.map(p => `${p.path}: ${p.message}`).join('; ');
  return `${what} failed (${r.status}): ${d.error || 'no answer'}`;
}

// now is the run clock, moved on locally since the last state.
function now() {
  if (!S.state) return 0;
  const st = S.state.status;
  if (st.ended || S.ended) return st.now_s;
  return st.now_s + (performance.now() - S.stateAt) / 1000;
}

function fmtS(s) {
  if (s == null) return '—';
  if (s >= 120) {
    const m = Math.floor(s / 60);
    return m + 'm' + String(Math.floor(s - m * 60)).padStart(2, '0') + 's';
  }
  return s.toFixed(1) + 's';
}

// ---- charts ----

const charts = [];
const colours = ['#2f6fb3', '#e8730c', '#2ca02c', '#8f3fb8', '#17becf', '#c7288d', '#8c6d31', '#6b6ecf'];
const classColour = { connect: '#8f3fb8', reset: '#e8730c', timeout: '#8c6d31', http_4xx: '#17becf', http_429: '#2f6fb3', http_5xx: '#cf222e', protocol: '#c7288d' };

function frameLine(label, color, f, dashed) {
  return { label, color, dashed, points: S.frames.map(fr => [fr.t + 0.5, f(fr)]) };
}

function serverLines(name, scale, rate) {
  const out = [];
  S.endpoints.forEach((ep, i) => {
    const pts = S.server.get(name + '\x00' + ep);
    if (!pts) return;
    let line = pts.map(([t, v]) => [t, v * scale]);
    if (rate) {
      line = [];
      for (let k = 1; k < pts.length; k++) {
        const dt = pts[k][0] - pts[k - 1][0];
        line.push([pts[k][0], dt > 0 ? Math.max(0, pts[k][1] - pts[k - 1][1]) / dt : null]);
      }
    }
    const own = S.endpoints.filter(e => S.server.has(name + '\x00' + e));
    const label = /^vgpu-/.test(ep) || /^gpu/.test(ep) ? ep : own.length > 1 ? `endpoint ${own.indexOf(ep)}` : 'server';
    out.push({ label, color: colours[own.indexOf(ep) % colours.length], points: line });
  });
  return out;
}

const chartDefs = [
  { id: 'chart-ttft', title: 'Time to first token', unit: 'ms', lines: () => [frameLine('p99', '#1d4f91', f => f.ttft.p99), frameLine('p50', '#7aa7dc', f => f.ttft.p50)] },
  { id: 'chart-itl', title: 'Inter-token latency', unit: 'ms', lines: () => [frameLine('p99', '#1d4f91', f => f.itl.p99), frameLine('p50', '#7aa7dc', f => f.itl.p50)] },
  { id: 'chart-e2e', title: 'End-to-end latency', unit: 'ms', lines: () => [frameLine('p99', '#1d4f91', f => f.e2e.p99), frameLine('p50', '#7aa7dc', f => f.e2e.p50)] },
  {
    id: 'chart-requests', title: 'Requests by outcome', unit: 'per second', lines: () => [
      frameLine('ok', '#2ca02c', f => f.ok), frameLine('failed', '#cf222e', f => f.failed),
      frameLine('cancelled', '#7f7f7f', f => f.cancelled, true), frameLine('dropped', '#d4a72c', f => f.dropped, true)],
  },
  {
    id: 'chart-errors', title: 'Error rate by class', unit: '% of finished', note: 'failed requests of each class / requests finished that second', lines: () => {
      const fin = f => f.ok + f.failed + f.cancelled;
      const share = (n, f) => (fin(f) ? 100 * n / fin(f) : null);
      const classes = new Set();
      for (const f of S.frames) for (const c in (f.errors || {})) classes.add(c);
      const out = [frameLine('all', '#57606a', f => share(f.failed, f), true)];
      for (const c of [...classes].sort()) out.push(frameLine(c, classColour[c] || '#bcbd22', f => share((f.errors || {})[c] || 0, f)));
      return out;
    },
  },
  {
    id: 'chart-consistency', title: 'Output consistency (probes)', unit: '% of probes', probes: true,
    note: "probes that gave their prompt's baseline reference / probes compared, by the second each answer ended", lines: () => {
      if (!S.frames.some(f => f && f.probes)) return [];
      return [frameLine('consistent', '#2ca02c', f => (f.probes && f.probes.compared ? 100 * f.probes.consistent / f.probes.compared : null))];
    },
  },
  { id: 'chart-inflight', title: 'Requests in flight', unit: 'requests', lines: () => [frameLine('mean', '#2f6fb3', f => f.in_flight), frameLine('max', '#7aa7dc', f => f.in_flight_max, true)] },
  { id: 'chart-tokens', title: 'Output tokens', unit: 'per second', lines: () => [frameLine('tokens/s', '#8f3fb8', f => f.tokens)] },
  { id: 'chart-server-kv', title: 'Server: KV cache usage', unit: '%', server: true, lines: () => serverLines('kv_cache_usage_perc', 100) },
  { id: 'chart-server-running', title: 'Server: requests running', unit: 'requests', server: true, lines: () => serverLines('num_requests_running', 1) },
  { id: 'chart-server-waiting', title: 'Server: requests waiting', unit: 'requests', server: true, lines: () => serverLines('num_requests_waiting', 1) },
  { id: 'chart-server-preemptions', title: 'Server: preemptions', unit: 'per second', server: true, lines: () => serverLines('num_preemptions_total', 1, true) },
  {
    id: 'chart-gpu-memory', title: 'GPU memory', unit: 'GiB (dashed: held by balloons)', server: true, lines: () => [
      ...serverLines('gpu_memory_used_bytes', 1 / 2 ** 30),
      ...serverLines('gpu_memory_balloon_bytes', 1 / 2 ** 30).map(l => Object.assign(l, { dashed: true, label: l.label + ' balloon' }))],
  },
];

// windows returns the fault windows (shaded) and the recovery phases
// seen in the events, and the game day's notes and actions (marked).
function windows() {
  const bands = [], open = new Map(), marks = [];
  let notes = 0;
  for (const e of S.events) {
    if (e.source === 'fault' && e.kind === 'injected') {
      const b = { from: e.at_s, to: null, label: e.target, fault: e.target };
      open.set(e.target, b);
      bands.push(b);
    } else if (e.source === 'fault' && (e.kind === 'reverted' || e.kind === 'revert_failed')) {
      const b = open.get(e.target);
      if (b) { b.to = e.at_s; open.delete(e.target); }
      if (e.kind === 'reverted') bands.push({ from: e.at_s, to: null, cls: 'recovery', recovering: e.target });
    } else if (e.source === 'runner' && e.kind === 'recovered') {
      for (const b of bands) if (b.recovering === e.target && b.to == null) b.to = e.at_s;
    } else if (e.source === 'gameday') {
      let label = e.kind;
      if (e.kind === 'note') label = 'N' + (++notes);
      marks.push({ at: e.at_s, label, title: `${label} +${fmtS(e.at_s)} ${e.by || ''}: ${e.detail || e.target || ''}` });
    }
  }
  // A recovery phase ends with the next fault.
  for (const b of bands) {
    if (b.cls !== 'recovery' || b.to != null) continue;
    const next = bands.find(o => o.fault && o.from > b.from);
    if (next) b.to = next.from;
  }
  return { bands, marks };
}

function drawCharts() {
  const xMax = Math.max(now(), S.frames.length);
  const { bands, marks } = windows();
  for (const c of charts) {
    const lines = c.def.lines();
    if (c.def.server || c.def.probes) c.chart.fig.hidden = lines.length === 0;
    c.chart.draw(xMax, lines, bands, marks);
  }
}

// ---- state ----

// loadStatus reads GET /api/status: the experiment, the targets (known
// once the load runs), the load's mode, the presets.
async function loadStatus() {
  const st = await api('GET', '/api/status');
  if (!st.ok) { show(failure('status', st), true); return false; }
  S.status = st.data;
  return true;
}

function applyState(st) {
  S.state = st;
  S.stateAt = performance.now();
  // A console opened while the target was starting learns its endpoints
  // once the load runs.
  if (S.status && !S.statusLive && st.status.now_s > 0) {
    S.statusLive = true;
    loadStatus().then(ok => { if (ok) { renderForm(); renderLoad(); } });
  }
  renderStatus();
  renderActive();
  renderTimeline();
  renderLoad();
  renderConsistency();
}

// renderConsistency shows the probes' consistency per phase so far and,
// per prompt that got another answer than its baseline reference, the
// most common one set against it.
function renderConsistency() {
  const c = S.state.consistency, box = $('consistency');
  box.hidden = !c;
  if (!c) return;
  const pct = w => (w.consistency == null ? '—' : (100 * w.consistency).toFixed(2) + '%');
  const rows = (c.windows || []).map(w => `<tr class="${w.consistency != null && w.consistency < 1 ? 'failed' : ''}"><td>${esc(w.phase)}${w.fault ? ' (' + esc(w.fault) + ')' : ''}</td><td class="num">${w.compared}</td><td class="num">${pct(w)}</td><td class="num">${w.divergence_at_min == null ? '—' : w.divergence_at_min}</td></tr>`).join('');
  const diffs = (c.divergent || []).map(d => {
    const cut = d.diff.cut ? '…' : '';
    const where = d.answer.phase + (d.answer.fault ? ' (' + d.answer.fault + ')' : '');
    return `<li><div class="prompt">${esc(d.prompt)}</div><div class="diff mono"><div><span class="tag">reference</span>${cut}${esc(d.diff.before)}<del>${esc(d.diff.reference)}</del></div>` +
      `<div><span class="tag">answer</span>${cut}${esc(d.diff.before)}<ins>${esc(d.diff.answer)}</ins></div></div>` +
      `<p class="hint">${d.answer.count}×, first at +${fmtS(d.answer.first_at_s)} in ${esc(where)}; leaves the reference at ${esc(c.unit)} ${d.answer.at}</p></li>`;
  }).join('');
  $('consistency-windows').innerHTML = rows;
  $('divergent').innerHTML = diffs || '<li class="muted">every probe gave its reference so far</li>';
}

function renderStatus() {
  const st = S.state.status;
  const banner = $('banner');
  let phase = st.phase || 'baseline';
  if (st.ended || S.ended) phase = 'ended';
  banner.className = 'banner ' + phase;
  $('phase').textContent = phase.toUpperCase() + (st.fault && phase !== 'ended' ? ' · ' + st.fault : '');
  const steady = $('steady');
  const word = { ok: 'holds', failing: 'does NOT hold', no_traffic: 'no traffic', none: 'no threshold probes' }[st.steady] || st.steady;
  steady.className = 'steady ' + st.steady;
  steady.textContent = 'steady state: ' + word;
  const last = S.frames[S.frames.length - 1];
  const cards = [
    ['run clock', '+' + fmtS(now()), st.gate_open ? 'faults may be injected' : 'checking the steady state first'],
    ['phase', st.phase + (st.fault ? ' (' + st.fault + ')' : ''), 'since +' + fmtS(st.phase_since_s)],
  ];
  if (last) {
    const fin = last.ok + last.failed + last.cancelled;
    cards.push(['ok requests/s', String(last.ok), `${last.failed} failed, ${last.dropped} dropped`]);
    cards.push(['error rate', fin ? (100 * last.failed / fin).toFixed(1) + '%' : '—', 'last second', last.failed > 0]);
    cards.push(['TTFT p99', last.ttft.p99 != null ? last.ttft.p99.toFixed(0) + ' ms' : '—', 'last second']);
    cards.push(['in flight', last.in_flight.toFixed(1), 'max ' + last.in_flight_max]);
  }
  if (st.aborted) cards.push(['aborted', 'yes', st.aborted, true]);
  $('cards').innerHTML = cards.map(([l, v, sub, bad]) => `<div class="card${bad ? ' bad' : ''}"><div class="label">${esc(l)}</div><div class="value">${esc(v)}</div><div class="sub">${esc(sub)}</div></div>`).join('');
  $('probes').innerHTML = (st.probes || []).map(p => `<li>${p.ok ? '<span class="ok">✓</span>' : '<span class="bad">✗</span>'} <code>${esc(p.probe)}</code> <span class="muted">${esc(p.detail || '')}</span></li>`).join('');
}

function renderActive() {
  const act = S.state.active || [];
  const t = now();
  $('active').innerHTML = act.length === 0 ? '<p class="muted">none</p>' : act.map(a => {
    const countdown = a.revert_at_s ? `reverts in ${fmtS(Math.max(0, a.revert_at_s - t))}` : 'until reverted';
    return `<div class="card fault-card" data-fault="${esc(a.name)}">
      <div class="label">${esc(a.type)}${a.step ? ' · timeline step ' + a.step : ''}</div>
      <div class="value">${esc(a.name)}</div>
      <div class="sub">${esc(a.target || '')}</div>
      <div class="sub"><span class="elapsed">${fmtS(Math.max(0, t - a.injected_at_s))}</span> since +${fmtS(a.injected_at_s)} · <span class="countdown">${countdown}</span>${a.by ? ' · by ' + esc(a.by) : ''}</div>
      <button type="button" class="small" data-revert="${esc(a.name)}">Revert</button>
    </div>`;
  }).join('');
}

function renderTimeline() {
  const tl = S.state.timeline;
  const steps = tl.steps || [];
  $('timeline-section').hidden = steps.length === 0;
  $('timeline').innerHTML = steps.map((s, i) => `<li class="${s.state}${i === tl.next ? ' next' : ''}">+${fmtS(s.at_s)} <b>${esc(s.name)}</b> ${esc(s.type)} for ${fmtS(s.duration_s)} <span class="muted">${s.state}${s.by ? ' by ' + esc(s.by) : ''}</span></li>`).join('');
  $('tl-pos').textContent = (tl.playing ? 'playing' : 'paused') + ` at +${fmtS(tl.offset_s)}` + (tl.playing && tl.next < steps.length ? `, next in ${fmtS(tl.next_in_s)}` : '');
}

function renderLoad() {
  const ld = S.state.load;
  const users = S.status && S.status.mode === 'users';
  $('load-now').textContent = (users ? `${ld.users} users` : `${ld.rate} req/s`) + (ld.preset ? `, requests like ${ld.preset}` : '');
  $('load-state').textContent = ld.ended ? 'ended' : ld.paused ? 'paused' : 'running';
  $('load-state').className = 'badge' + (ld.paused ? ' paused' : '');
  $('load-pause').textContent = ld.paused ? 'Resume' : 'Pause';
  $('load-label').textContent = users ? 'users' : 'rate (req/s)';
  $('load-value').placeholder = users ? String(ld.users) : String(ld.rate);
}

function renderEvents() {
  const rows = S.events.slice(-300).reverse();
  $('events').innerHTML = rows.map(e => `<tr><td class="num">+${e.at_s.toFixed(1)}s</td><td>${esc(e.source)}</td><td>${esc(e.kind)}</td><td>${esc(e.target || '')}</td><td>${esc(e.detail || '')}</td><td>${esc(e.by || '')}</td></tr>`).join('');
  let n = 0;
  const notes = [];
  for (const e of S.events) {
    if (e.source === 'gameday' && e.kind === 'note') notes.push(`<li data-note="N${++n}"><b>N${n}</b> +${fmtS(e.at_s)} <span class="muted">${esc(e.by || '')}</span>: ${esc(e.detail)}</li>`);
  }
  $('notes').innerHTML = notes.join('');
}

function addServer(points) {
  for (const p of points || []) {
    if (!S.endpoints.includes(p.endpoint)) S.endpoints.push(p.endpoint);
    const k = p.name + '\x00' + p.endpoint;
    if (!S.server.has(k)) S.server.set(k, []);
    const pts = S.server.get(k);
    pts.push([p.at_s, p.value]);
    if (pts.length > 1 && pts[pts.length - 2][0] > p.at_s) pts.sort((a, b) => a[0] - b[0]);
  }
}

function showEnded(e) {
  S.ended = e;
  const box = $('ended');
  box.hidden = false;
  const files = (e.files || []).map(f => `<li><code>${esc(f)}</code></li>`).join('');
  box.innerHTML = `<b>The game day has ended</b>${e.verdict ? ' — verdict ' + esc(e.verdict.toUpperCase()) : ''}${e.detail ? ' (' + esc(e.detail) + ')' : ''}. ` +
    `Every fault was reverted.${e.error ? ' <span class="bad">' + esc(e.error) + '</span>' : ''}<ul>${files}</ul>`;
  for (const b of document.querySelectorAll('button, input, select, textarea')) b.disabled = true;
  if (S.state) renderStatus();
}

// ---- the stream ----

function connect() {
  const es = new EventSource('/api/stream');
  es.addEventListener('hello', ev => {
    const h = JSON.parse(ev.data);
    S.frames = h.frames || [];
    S.server = new Map();
    S.endpoints = [];
    addServer(h.server);
    S.events = h.events || [];
    applyState(h);
    renderEvents();
    drawCharts();
    if (h.ended) { showEnded(h.ended); es.close(); }
  });
  es.addEventListener('tick', ev => {
    const t = JSON.parse(ev.data);
    if (t.frame) S.frames[t.frame.t] = t.frame;
    addServer(t.server);
    if (t.events && t.events.length) {
      // A note this page wrote is shown at once; the server's copy replaces it.
      S.events = S.events.filter(e => !e.local || !t.events.some(n => n.kind === e.kind && n.at_s === e.at_s && n.detail === e.detail));
      S.events.push(...t.events);
      renderEvents();
    }
    applyState(t);
    drawCharts();
  });
  es.addEventListener('ended', ev => {
    showEnded(JSON.parse(ev.data));
    es.close();
  });
  es.onerror = () => {
    if (S.ended) es.close();
  };
}

// ---- the fault form ----

function flatten(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj || {})) {
    if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, prefix + k + '.', out);
    else out[prefix + k] = v;
  }
  return out;
}

function selectedType() {
  return S.types.find(t => t.name === $('fault-type').value);
}

function renderForm() {
  const t = selectedType();
  if (!t) return;
  $('fault-summary').textContent = `${t.summary} (${t.lifetime}; ${t.target === 'proxy' ? 'acts through the proxies in front of the endpoints' : 'its params say where it acts'})`;
  const targets = S.status ? S.status.targets : { endpoints: [] };
  let tg = '';
  if (t.target === 'proxy') {
    const eps = targets.endpoints || [];
    const keep = Math.min(targets.min_available || 0, eps.length);
    tg = '<label class="muted">endpoints:</label>' + eps.map((e, i) => `<label><input type="checkbox" data-endpoint="${e.index}"${i < eps.length - keep ? ' checked' : ''}> ${e.index} <span class="muted mono">${esc(e.url)}</span></label>`).join('');
    if ((targets.proxies || []).length) {
      tg += '<label>or through proxy <select id="fault-proxy"><option value="">—</option>' + targets.proxies.map(p => `<option>${esc(p)}</option>`).join('') + '</select></label>';
    }
    if (keep) tg += `<p class="hint">blast radius: ${keep} endpoint(s) must stay out of every fault's reach</p>`;
  } else if (targets.replicas && targets.replicas.length) {
    tg = '<label class="muted">replicas now:</label>' + targets.replicas.map(r => `<span class="badge">${esc(r.id)} ${r.up ? 'up' : 'down'}</span>`).join(' ') +
      '<p class="hint">the fault picks among those up as its select params say</p>';
  }
  $('fault-target').innerHTML = tg;
  const example = flatten(t.example_params, '', {});
  const sim = targets.sim;
  $('fault-params').innerHTML = t.params.filter(p => p.type !== 'object').map(p => {
    let v = example[p.name];
    if (sim && (p.name.startsWith('target.') || /filled in with target\.sim/.test(p.doc || ''))) v = undefined;
    if (Array.isArray(v)) v = v.join(', ');
    else if (v && typeof v === 'object') v = Object.entries(v).map(([a, b]) => `${a}=${b}`).join(', ');
    const val = v == null ? '' : String(v);
    const id = 'param-' + p.name.replace(/\./g, '-');
    let input;
    if (p.type === 'boolean') {
      input = `<select id="${id}" data-param="${esc(p.name)}" data-type="boolean"><option value="">default${p.default ? ' (' + esc(p.default) + ')' : ''}</option><option${val === 'true' ? ' selected' : ''}>true</option><option${val === 'false' ? ' selected' : ''}>false</option></select>`;
    } else {
      const num = p.type === 'integer' || p.type === 'number';
      input = `<input id="${id}" data-param="${esc(p.name)}" data-type="${esc(p.type)}"${num ? ' type="number" step="any"' : ''} value="${esc(val)}" placeholder="${esc(p.default ? 'default ' + p.default : '')}">`;
    }
    return `<div class="param"><label for="${id}">${esc(p.name)}${p.required ? ' <span class="req">*</span>' : ''} <span class="muted">${esc(p.type)}${p.unit ? ', ' + esc(p.unit) : ''}</span></label>${input}<p class="doc">${esc(p.doc || '')}</p></div>`;
  }).join('');
}

function setPath(obj, path, v) {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] = o[k] || {});
  o[keys[keys.length - 1]] = v;
}

function convert(type, raw) {
  if (type === 'integer') return parseInt(raw, 10);
  if (type === 'number') return parseFloat(raw);
  if (type === 'boolean') return raw === 'true';
  if (type.startsWith('list of ')) {
    const el = type.slice(8);
    return raw.split(',').map(s => s.trim()).filter(s => s !== '').map(s => convert(el, s));
  }
  if (type === 'map') {
    const m = {};
    for (const part of raw.split(',')) {
      const [k, ...rest] = part.split('=');
      if (k.trim()) m[k.trim()] = rest.join('=').trim();
    }
    return m;
  }
  return raw;
}

async function inject(ev) {
  ev.preventDefault();
  const t = selectedType();
  if (!t) return;
  const body = { type: t.name, params: {} };
  for (const el of $('fault-params').querySelectorAll('[data-param]')) {
    const raw = el.value.trim();
    if (raw === '') continue;
    setPath(body.params, el.dataset.param, convert(el.dataset.type, raw));
  }
  if (t.target === 'proxy') {
    const px = $('fault-proxy');
    if (px && px.value) body.target = { proxy: px.value };
    else {
      const all = [...$('fault-target').querySelectorAll('[data-endpoint]')];
      const picked = all.filter(c => c.checked).map(c => parseInt(c.dataset.endpoint, 10));
      if (picked.length === 0) { show('pick at least one endpoint', true); return; }
      if (picked.length < all.length) body.target = { endpoints: picked };
    }
  }
  const dur = $('fault-duration').value.trim();
  if (dur) body.duration = /^[0-9.]+$/.test(dur) ? parseFloat(dur) : dur;
  const name = $('fault-name').value.trim();
  if (name) body.name = name;
  $('inject').disabled = true;
  const r = await api('POST', '/api/faults', body);
  $('inject').disabled = !!S.ended;
  if (!r.ok) { show(failure('inject', r), true); return; }
  show(`injected ${r.data.fault.name} (${r.data.fault.type}) at +${fmtS(r.data.fault.injected_at_s)}`);
  $('fault-name').value = '';
  refresh();
}

// refresh reads the state now rather than at the next tick.
async function refresh() {
  const [a, tl, ld] = await Promise.all([api('GET', '/api/active'), api('GET', '/api/timeline'), api('GET', '/api/load')]);
  if (!S.state || !a.ok) return;
  S.state.active = a.data.faults;
  if (tl.ok) S.state.timeline = tl.data;
  if (ld.ok) S.state.load = ld.data;
  renderActive();
  renderTimeline();
  renderLoad();
}

// ---- wiring ----

async function act(what, method, path, body) {
  const r = await api(method, path, body);
  if (!r.ok) show(failure(what, r), true);
  else show(what + ': done');
  refresh();
  return r;
}

let endArmed = null;

async function init() {
  for (const def of chartDefs) charts.push({ def, chart: new Chart($('charts'), def) });
  const [ok, ft] = await Promise.all([loadStatus(), api('GET', '/api/faults')]);
  if (!ok) return;
  const st = { data: S.status };
  document.title = `game day · ${st.data.experiment} · llmchaos`;
  $('title').textContent = `llmchaos game day · ${st.data.experiment}`;
  $('who').textContent = 'you are ' + st.data.who;
  $('rundir').textContent = st.data.run_dir;
  if (ft.ok) {
    S.types = ft.data.types;
    const fams = [...new Set(S.types.map(t => t.family))];
    $('fault-type').innerHTML = fams.map(f => `<optgroup label="${esc(f)}">` + S.types.filter(t => t.family === f).map(t => `<option value="${esc(t.name)}">${esc(t.name)}</option>`).join('') + '</optgroup>').join('');
    renderForm();
  }
  $('fault-type').addEventListener('change', renderForm);
  $('inject-form').addEventListener('submit', inject);
  $('active').addEventListener('click', ev => {
    const name = ev.target.dataset && ev.target.dataset.revert;
    if (name) act('revert ' + name, 'DELETE', '/api/active/' + encodeURIComponent(name));
  });
  $('revert-all').addEventListener('click', () => act('revert all', 'POST', '/api/revert-all'));
  for (const op of ['play', 'pause', 'step', 'skip']) $('tl-' + op).addEventListener('click', () => act('timeline ' + op, 'POST', '/api/timeline/' + op));
  $('note-form').addEventListener('submit', async ev => {
    ev.preventDefault();
    const text = $('note-text').value.trim();
    if (!text) return;
    const r = await api('POST', '/api/notes', { text });
    if (!r.ok) { show(failure('note', r), true); return; }
    $('note-text').value = '';
    S.events.push({ at_s: r.data.note.at_s, source: 'gameday', kind: 'note', detail: r.data.note.detail, by: r.data.note.by, local: true });
    renderEvents();
    drawCharts();
    show(`note added at +${fmtS(r.data.note.at_s)}`);
  });
  $('load-form').addEventListener('submit', ev => {
    ev.preventDefault();
    const v = parseFloat($('load-value').value);
    const body = S.status.mode === 'users' ? { users: Math.round(v) } : { rate: v };
    act('load', 'POST', '/api/load', body);
  });
  $('load-preset').innerHTML = (S.status.presets || []).map(p => `<option value="${esc(p.name)}" title="${esc(p.description)}">${esc(p.name)}</option>`).join('');
  $('preset-form').addEventListener('submit', ev => {
    ev.preventDefault();
    act('load', 'POST', '/api/load', { preset: $('load-preset').value });
  });
  $('load-pause').addEventListener('click', () => act('load', 'POST', '/api/load', { paused: !(S.state && S.state.load.paused) }));
  $('end').addEventListener('click', async () => {
    if (!endArmed) {
      $('end').textContent = 'Click again to end';
      endArmed = setTimeout(() => { endArmed = null; $('end').textContent = 'End game day'; }, 5000);
      return;
    }
    clearTimeout(endArmed);
    endArmed = null;
    $('end').textContent = 'Ending…';
    const r = await api('POST', '/api/end');
    if (!r.ok) show(failure('end', r), true);
    else show('ending: every fault is reverted, then the reports are written');
  });
  connect();
  // The clock, elapsed times and countdowns move between ticks.
  setInterval(() => {
    if (!S.state || S.ended) return;
    $('clock').textContent = '+' + fmtS(now());
    for (const card of document.querySelectorAll('#active .fault-card')) {
      const a = (S.state.active || []).find(x => x.name === card.dataset.fault);
      if (!a) continue;
      card.querySelector('.elapsed').textContent = fmtS(Math.max(0, now() - a.injected_at_s));
      if (a.revert_at_s) card.querySelector('.countdown').textContent = `reverts in ${fmtS(Math.max(0, a.revert_at_s - now()))}`;
    }
  }, 250);
}

init();
