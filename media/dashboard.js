// GPU Sessions — Node Dashboard (runs inside the webview; no network: uPlot is loaded from the extension).
// Draws the model the extension shapes (src/extension/dashboardModel.ts, {type: 'model', times, charts, markers,
// empty, text}): the node-total tok/s and $/Mtok charts first, one small chart per server, the per-server details
// behind a toggle, per-GPU charts with named legends. Every Y axis starts at 0; the guard's transitions are
// labelled markers; cursors are synced across the charts; each canvas is an image whose aria-label is the chart's
// summary. A node that is unreachable or has no samples gets its reason and a Retry button. Colours are the VS Code
// theme's, read again (and the charts redrawn) when the theme changes.
/* global uPlot, acquireVsCodeApi */
(function () {
  const vscode = acquireVsCodeApi();
  const summary = document.getElementById('summary');
  const empty = document.getElementById('empty');
  const emptyReason = document.getElementById('empty-reason');
  const retry = document.getElementById('retry');
  const chartsRoot = document.getElementById('charts');
  const details = document.getElementById('details');
  const SYNC = 'gpu-sessions-dashboard';
  const charts = new Map();
  let last = null;
  /** The node's window (model.range, unix s): the x range of every chart, so they all share it (issue 43). */
  let xRange = null;

  const css = (v, d) => getComputedStyle(document.body).getPropertyValue(v).trim() || d;
  /** The theme's colours, read now (they change with the theme). */
  function theme() {
    return {
      series: [
        css('--vscode-charts-blue', '#3794ff'),
        css('--vscode-charts-green', '#89d185'),
        css('--vscode-charts-orange', '#d18616'),
        css('--vscode-charts-purple', '#b180d7'),
        css('--vscode-charts-yellow', '#cca700'),
        css('--vscode-charts-red', '#f14c4c'),
        css('--vscode-charts-foreground', '#cccccc'),
      ],
      fg: css('--vscode-foreground', '#cccccc'),
      grid: css('--vscode-editorWidget-border', '#454545'),
      bad: css('--vscode-charts-red', '#f14c4c'),
      good: css('--vscode-charts-green', '#89d185'),
      bg: css('--vscode-editor-background', '#1e1e1e'),
      font: css('--vscode-font-family', 'sans-serif'),
    };
  }
  let colours = theme();

  const LABEL_LANES = 4;

  // labelLanes:begin
  /**
   * Lanes for marker labels (items sorted by x, each {x, w}): each goes to the first lane whose last label ends more
   * than `gap` before it; -1 when no lane of `max` has room (that label is shown on hover only). Never two labels
   * over each other, however many events an hour brings.
   */
  function labelLanes(items, max, gap) {
    const ends = [];
    return items.map((it) => {
      let lane = ends.findIndex((e) => e + gap <= it.x);
      if (lane < 0 && ends.length < max) lane = ends.push(-Infinity) - 1;
      if (lane >= 0) ends[lane] = it.x + it.w;
      return lane;
    });
  }
  // labelLanes:end

  /** Dashed lines at the guard's transitions; on the large charts with their labels ("22:02 :22795 crashed"). */
  function markPlugin(markers, withLabels) {
    return {
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const dpr = window.devicePixelRatio || 1;
            ctx.save();
            ctx.font = `${10 * dpr}px ${colours.font}`;
            ctx.textBaseline = 'top';
            ctx.textAlign = 'left';
            const shown = [];
            for (const m of markers) {
              const x = u.valToPos(m.t, 'x', true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              const c = m.bad ? colours.bad : colours.good;
              ctx.strokeStyle = c;
              ctx.setLineDash([4, 3]);
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
              if (!withLabels) continue;
              const w = ctx.measureText(m.label).width;
              shown.push({ m, c, w, x: Math.min(x + 3 * dpr, u.bbox.left + u.bbox.width - w - 2 * dpr) });
            }
            // each label in the first lane where it fits; none over another: the rest only on hover (issue 43)
            const lanes = labelLanes(shown, LABEL_LANES, 6 * dpr);
            u.hiddenMarks = [];
            shown.forEach((l, i) => {
              if (lanes[i] < 0) return void u.hiddenMarks.push(l.m);
              const ty = u.bbox.top + 2 * dpr + lanes[i] * 13 * dpr;
              ctx.fillStyle = colours.bg;
              ctx.globalAlpha = 0.8;
              ctx.fillRect(l.x - 1, ty - 1, l.w + 2, 12 * dpr);
              ctx.globalAlpha = 1;
              ctx.fillStyle = l.c;
              ctx.fillText(l.m.label, l.x, ty);
            });
            ctx.restore();
          },
        ],
        // a label with no lane free: shown when the cursor is on its line
        setCursor: [
          (u) => {
            const hid = u.hiddenMarks || [];
            const left = u.cursor.left;
            if (!hid.length || left === null || left === undefined || left < 0) return;
            const near = hid.find((m) => Math.abs(u.valToPos(m.t, 'x') - left) <= 6);
            u.root.title = near ? near.label : '';
          },
        ],
      },
    };
  }

  /** The Y axis wide enough for its longest label ("15,000"), not clipped to "5,000". */
  function axisSize(_u, values) {
    const n = values && values.length ? Math.max(...values.map((v) => String(v).length)) : 3;
    return Math.max(36, n * 7 + 18);
  }

  function box(c) {
    let el = document.getElementById('box-' + c.id);
    if (!el) {
      el = document.createElement('section');
      el.id = 'box-' + c.id;
      const h = document.createElement('h3');
      el.appendChild(h);
      // the canvas's text alternative: role="img" with the chart's summary as its name
      const img = document.createElement('div');
      img.id = c.id;
      img.setAttribute('role', 'img');
      el.appendChild(img);
      document.getElementById('group-' + c.group).appendChild(el);
    }
    el.className = c.small ? 'chart small' : 'chart';
    el.querySelector('h3').textContent = c.title;
    return el;
  }

  function draw(c, times, markers) {
    const el = box(c);
    const img = el.querySelector('[role="img"]');
    img.setAttribute('aria-label', c.summary);
    img.title = c.summary;
    // what the tests read: how many points each series has, its names and the stroke it is drawn with
    el.dataset.series = String(c.series.length);
    el.dataset.points = c.series.map((s) => s.values.filter((v) => v !== null && v !== undefined).length).join(',');
    el.dataset.names = c.series.map((s) => s.name).join(',');
    img.dataset.stroke = colours.series[0];
    const data = [times, ...c.series.map((s) => s.values)];
    const parent = el.parentElement;
    const avail = (parent && parent.clientWidth) || chartsRoot.clientWidth || 800;
    const width = Math.max(220, (c.small ? Math.max(240, avail / 4 - 8) : avail) - 12);
    const height = c.small ? 130 : 200;
    const key = c.series.map((s) => s.name).join(',') + '|' + markers.length + '|' + (markers.length ? markers[markers.length - 1].t : '');
    const old = charts.get(c.id);
    if (old && old.key === key) {
      old.u.setData(data);
      if (old.width !== width) {
        old.u.setSize({ width, height });
        old.width = width;
      }
      return;
    }
    if (old) old.u.destroy();
    const u = new uPlot(
      {
        width,
        height,
        plugins: [markPlugin(markers, !c.small)],
        // what the tests read: the x window drawn ("min,max", unix s)
        hooks: { setScale: [(u, key) => key === 'x' && (el.dataset.xrange = `${u.scales.x.min},${u.scales.x.max}`)] },
        cursor: { sync: { key: SYNC, setSeries: false } },
        legend: { show: true, live: !c.small },
        scales: {
          // the node's window, not each chart's own data: a server that started later is not squeezed to a sliver
          x: { time: true, range: (_u, min, max) => (xRange ? [xRange.min, xRange.max] : [min, max]) },
          // every Y axis from 0: a flat line is flat, not a zoomed-in wobble
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
        },
        axes: [
          { stroke: colours.fg, grid: { stroke: colours.grid, width: 1 }, ticks: { stroke: colours.grid } },
          { stroke: colours.fg, grid: { stroke: colours.grid, width: 1 }, ticks: { stroke: colours.grid }, size: axisSize },
        ],
        series: [
          {},
          ...c.series.map((s, i) => ({
            label: s.name,
            stroke: colours.series[i % colours.series.length],
            width: c.id === 'total' ? 2 : 1.5,
            spanGaps: false,
            points: { show: false },
          })),
        ],
      },
      data,
      img,
    );
    charts.set(c.id, { u, key, width });
  }

  function render(model) {
    last = model;
    xRange = model.range || null;
    summary.textContent = model.text || '';
    retry.disabled = false;
    retry.textContent = 'Retry';
    if (model.empty) {
      empty.hidden = false;
      emptyReason.textContent = model.empty.reason;
    } else empty.hidden = true;
    // an unreachable node with no history: the reason and Retry, no blank frames
    chartsRoot.hidden = model.times.length === 0;
    document.body.dataset.samples = String(model.times.length);
    document.body.dataset.empty = model.empty ? 'true' : 'false';
    if (!model.times.length) return;
    const ids = new Set(model.charts.map((c) => c.id));
    for (const [id, old] of charts) {
      if (ids.has(id)) continue;
      old.u.destroy();
      charts.delete(id);
      const el = document.getElementById('box-' + id);
      if (el) el.remove();
    }
    for (const c of model.charts) {
      if (c.group === 'detail' && !details.open) continue; // drawn when the toggle opens
      draw(c, model.times, model.markers);
    }
    document.getElementById('head-server').hidden = !model.charts.some((c) => c.group === 'server');
    document.getElementById('head-gpu').hidden = !model.charts.some((c) => c.group === 'gpu');
    const box = document.getElementById('box-total');
    if (box) box.dataset.markers = model.markers.map((m) => m.label).join('\n');
  }

  /** Theme switched: colours are read again and every chart is built anew with them. */
  function retheme() {
    colours = theme();
    for (const c of charts.values()) c.u.destroy();
    charts.clear();
    document.body.dataset.theme = document.body.className;
    if (last) render(last);
  }
  // VS Code switches the body's vscode-light / vscode-dark / vscode-high-contrast classes and the --vscode-*
  // variables on <html>'s style when the colour theme changes.
  let themeTimer = null;
  const onTheme = () => {
    clearTimeout(themeTimer);
    themeTimer = setTimeout(retheme, 30);
  };
  new MutationObserver(onTheme).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  new MutationObserver(onTheme).observe(document.documentElement, { attributes: true, attributeFilter: ['style'] });
  details.addEventListener('toggle', () => last && render(last));
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => last && render(last), 150);
  });
  retry.addEventListener('click', () => {
    retry.disabled = true;
    retry.textContent = 'Retrying…';
    vscode.postMessage({ type: 'retry' });
  });

  window.addEventListener('message', (e) => {
    if (e.data && e.data.type === 'model') render(e.data);
  });
  document.body.dataset.theme = document.body.className;
  vscode.postMessage({ type: 'ready' });
})();
