// Shared by the pages: loading ctorch, a status line, error capture, line plots.
export const errors = [];
window.__errors = errors;
window.addEventListener('error', (e) => { errors.push(String(e.error || e.message)); showError(e.error || e.message); });
window.addEventListener('unhandledrejection', (e) => { errors.push(String(e.reason)); showError(e.reason); });

function showError(e) {
  const el = document.getElementById('error');
  if (el) { el.textContent = 'Error: ' + (e && e.message ? e.message : e); el.hidden = false; }
}
export function report(e) { errors.push(String(e && e.stack ? e.stack : e)); showError(e); console.error(e); }

/** Loads ctorch (/pkg/index.mjs) and writes which build runs into #status. */
export async function loadTorch() {
  const params = new URLSearchParams(location.search);
  const threads = params.get('threads');
  const { load } = await import('/pkg/index.mjs');
  const torch = await load(threads ? { threads: threads === 'auto' ? 'auto' : Number(threads) } : {});
  const s = document.getElementById('status');
  if (s) s.textContent = `ctorch ${torch.version} · WebAssembly SIMD128 · ${torch.info.build === 'pthreads' ? `${torch.info.threads} threads` : 'single thread'} (${torch.info.reason})`;
  window.torch = torch;
  return torch;
}

export const sleep = (ms = 0) => new Promise((r) => setTimeout(r, ms));
export const param = (name, dflt) => { const v = new URLSearchParams(location.search).get(name); return v == null ? dflt : v; };

/** A minimal line plot on a canvas: plot.push(series, y); redraws itself. */
export class Plot {
  constructor(canvas, { title = '', series = [{ name: 'y', color: '#2563eb' }], yMin = null, yMax = null } = {}) {
    this.c = canvas; this.title = title; this.series = series.map((s) => ({ ...s, pts: [] }));
    this.yMin = yMin; this.yMax = yMax;
  }
  push(i, x, y) { this.series[i].pts.push([x, y]); this.draw(); }
  draw() {
    const c = this.c, g = c.getContext('2d'), W = c.width, H = c.height, pad = 34;
    g.clearRect(0, 0, W, H); g.fillStyle = '#fff'; g.fillRect(0, 0, W, H);
    const all = this.series.flatMap((s) => s.pts);
    g.fillStyle = '#111'; g.font = '12px sans-serif'; g.fillText(this.title, pad, 14);
    if (!all.length) return;
    const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
    const y0 = this.yMin ?? Math.min(...ys), y1 = this.yMax ?? Math.max(...ys, y0 + 1e-6);
    const X = (x) => pad + ((x - x0) / (x1 - x0)) * (W - pad - 8), Y = (y) => H - 20 - ((y - y0) / (y1 - y0 || 1)) * (H - 44);
    g.strokeStyle = '#ccc'; g.beginPath(); g.moveTo(pad, 20); g.lineTo(pad, H - 20); g.lineTo(W - 8, H - 20); g.stroke();
    g.fillStyle = '#555'; g.fillText(y1.toFixed(3), 2, 26); g.fillText(y0.toFixed(3), 2, H - 22); g.fillText(String(x1), W - 40, H - 6);
    this.series.forEach((s, k) => {
      g.strokeStyle = s.color; g.lineWidth = 1.5; g.beginPath();
      s.pts.forEach(([x, y], i) => (i ? g.lineTo(X(x), Y(y)) : g.moveTo(X(x), Y(y))));
      g.stroke();
      g.fillStyle = s.color; g.fillText(s.name + (s.pts.length ? ` ${s.pts[s.pts.length - 1][1].toFixed(4)}` : ''), pad + 10 + k * 150, 30);
    });
  }
}
