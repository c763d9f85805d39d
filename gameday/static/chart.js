// chart.js: the console's charts, drawn as inline SVG (no library).
// A Chart draws lines over the run clock with fault windows shaded
// beneath them and the game day's notes and actions as dashed markers,
// as the HTML report draws its plots.

const W = 560, H = 200, LEFT = 42, RIGHT = 8, TOP = 16, BOTTOM = 22;

// esc escapes text for SVG/HTML markup.
export function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
function niceStep(x) {
  if (!(x > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 2.5, 5, 10]) if (x <= m * p * (1 + 1e-9)) return m * p;
  return 10 * p;
}

// ticks places about n ticks at round values over [lo, hi].
function ticks(lo, hi, n) {
  const step = niceStep((hi - lo) / n);
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return { step, out };
}

function label(v, step) {
  if (Math.abs(v) >= 10000 && step >= 1000) return (v / 1000) + 'k';
  let dec = 0;
  for (let s = step; dec < 4 && Math.abs(s - Math.round(s)) > 1e-9 * Math.max(1, Math.abs(s)); s *= 10) dec++;
  return v.toFixed(dec);
}

// fmtClock writes run-clock seconds as "45s", "3m", "1h05m".
function fmtClock(s) {
  if (s < 120) return Math.round(s) + 's';
  if (s < 7200) return Math.round(s / 60) + 'm';
  const h = Math.floor(s / 3600);
  return h + 'h' + String(Math.round((s - h * 3600) / 60)).padStart(2, '0') + 'm';
}

// decimate keeps at most 2n points of pts: in n buckets, the lowest and
// the highest (a spike still shows), breaks (null) kept.
function decimate(pts, n) {
  if (pts.length <= 2 * n) return pts;
  const k = Math.ceil(pts.length / n), out = [];
  for (let i = 0; i < pts.length; i += k) {
    let lo = -1, hi = -1;
    const end = Math.min(i + k, pts.length);
    for (let j = i; j < end; j++) {
      const y = pts[j][1];
      if (y == null || !isFinite(y)) continue;
      if (lo < 0 || y < pts[lo][1]) lo = j;
      if (hi < 0 || y > pts[hi][1]) hi = j;
    }
    if (lo < 0) { if (!out.length || out[out.length - 1][1] != null) out.push([pts[i][0], null]); }
    else if (lo === hi) out.push(pts[lo]);
    else out.push(pts[Math.min(lo, hi)], pts[Math.max(lo, hi)]);
  }
  return out;
}

// Chart is one chart of the console.
export class Chart {
  // parent is the element it is added to; opts: id, title, unit, yMin
  // (the least top of the y axis), note.
  constructor(parent, opts) {
    this.opts = Object.assign({ yMin: 1 }, opts);
    const fig = document.createElement('figure');
    fig.id = opts.id;
    fig.innerHTML = `<figcaption><span class="title">${esc(opts.title)}</span><span class="unit">${esc(opts.unit || '')}</span><span class="keys"></span></figcaption>` +
      `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(opts.title)}"></svg>` +
      (opts.note ? `<p class="hint">${esc(opts.note)}</p>` : '');
    parent.appendChild(fig);
    this.fig = fig;
    this.svg = fig.querySelector('svg');
    this.keys = fig.querySelector('.keys');
    this.keyText = '';
  }

  // draw draws series over [0, xMax] seconds: series are {label, color,
  // dashed, points: [[t, y or null]]}; bands {from, to (null: still
  // open), label, fault, cls}; marks {at, label}.
  draw(xMax, series, bands, marks) {
    xMax = Math.max(xMax, 10);
    const pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    const x = t => LEFT + (t / xMax) * pw;
    let ymax = this.opts.yMin;
    for (const s of series) for (const p of s.points) if (p[1] != null && isFinite(p[1])) ymax = Math.max(ymax, p[1]);
    const yt = ticks(0, ymax, 4);
    const top = Math.max(ymax * 1.12, yt.out[yt.out.length - 1]);
    const y = v => TOP + ph - (v / top) * ph;
    const parts = [];
    for (const b of bands) {
      const to = b.to == null ? xMax : b.to;
      const x0 = x(Math.max(0, b.from)), x1 = Math.max(x(Math.min(to, xMax)), x0 + 1);
      const cls = 'band' + (b.cls ? ' ' + b.cls : '') + (b.to == null ? ' open' : '');
      parts.push(`<rect class="${cls}"${b.fault ? ` data-fault="${esc(b.fault)}"` : ''} x="${x0.toFixed(1)}" y="${TOP}" width="${(x1 - x0).toFixed(1)}" height="${ph}"/>`);
      if (b.label) parts.push(`<text class="band-label" x="${(x0 + 3).toFixed(1)}" y="${TOP - 4}">${esc(b.label)}</text>`);
    }
    for (const v of yt.out) {
      if (v > top) continue;
      parts.push(`<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`);
      parts.push(`<text x="${LEFT - 4}" y="${(y(v) + 3).toFixed(1)}" text-anchor="end">${label(v, yt.step)}</text>`);
    }
    const xt = ticks(0, xMax, 6);
    for (const v of xt.out) {
      parts.push(`<text x="${x(v).toFixed(1)}" y="${H - 6}" text-anchor="middle">${fmtClock(v)}</text>`);
    }
    parts.push(`<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${TOP + ph}" y2="${TOP + ph}"/>`);
    parts.push(`<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + ph}"/>`);
    for (const s of series) {
      let d = '', pen = false, dots = '';
      const pts = decimate(s.points, pw / 2);
      for (let i = 0; i < pts.length; i++) {
        const [t, v] = pts[i];
        if (v == null || !isFinite(v)) { pen = false; continue; }
        const px = x(t).toFixed(1), py = y(v).toFixed(1);
        const alone = !pen && (i + 1 >= pts.length || pts[i + 1][1] == null);
        if (alone) dots += `<circle cx="${px}" cy="${py}" r="1.8" fill="${s.color}"/>`;
        d += (pen ? 'L' : 'M') + px + ' ' + py;
        pen = true;
      }
      parts.push(`<path class="line" data-series="${esc(s.label)}" d="${d}" stroke="${s.color}"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>` + dots);
    }
    for (const m of marks) {
      if (m.at > xMax) continue;
      const mx = x(m.at).toFixed(1);
      parts.push(`<line class="mark" data-label="${esc(m.label)}" x1="${mx}" x2="${mx}" y1="${TOP}" y2="${TOP + ph}"><title>${esc(m.title || m.label)}</title></line>`);
      parts.push(`<text class="mark-label" x="${(+mx + 2).toFixed(1)}" y="${TOP + ph - 3}">${esc(m.label)}</text>`);
    }
    this.svg.innerHTML = parts.join('');
    const keyText = series.map(s => `<span class="key"><svg width="14" height="8" aria-hidden="true"><line x1="0" x2="14" y1="4" y2="4" stroke="${s.color}" stroke-width="3"${s.dashed ? ' stroke-dasharray="4 2"' : ''}/></svg>${esc(s.label)}</span>`).join(' ');
    if (keyText !== this.keyText) {
      this.keys.innerHTML = keyText;
      this.keyText = keyText;
    }
  }
}
