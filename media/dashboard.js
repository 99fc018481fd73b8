// GPU Sessions — Node Dashboard (runs inside the webview; no network: uPlot is loaded from the extension).
// Receives {type: 'data', node, samples, transitions, summary} from the extension and draws:
// throughput per server, running/queued requests, KV usage and accept length, per-GPU small multiples,
// with the live guard's transitions marked on the time axis. Colours come from the VS Code theme.
/* global uPlot, acquireVsCodeApi */
(function () {
  const vscode = acquireVsCodeApi();
  const root = document.getElementById('charts');
  const summary = document.getElementById('summary');
  const charts = new Map();
  const css = (v, d) => getComputedStyle(document.body).getPropertyValue(v).trim() || d;
  const palette = () => [
    css('--vscode-charts-blue', '#3794ff'),
    css('--vscode-charts-green', '#89d185'),
    css('--vscode-charts-orange', '#d18616'),
    css('--vscode-charts-purple', '#b180d7'),
    css('--vscode-charts-yellow', '#cca700'),
    css('--vscode-charts-red', '#f14c4c'),
    css('--vscode-charts-foreground', '#cccccc'),
  ];

  function markPlugin(marks) {
    return {
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            for (const m of marks) {
              const x = u.valToPos(m.t, 'x', true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.strokeStyle = m.bad ? css('--vscode-charts-red', '#f14c4c') : css('--vscode-charts-green', '#89d185');
              ctx.setLineDash([4, 3]);
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
  }

  function chart(id, title, names, data, marks, small) {
    let box = document.getElementById('box-' + id);
    if (!box) {
      box = document.createElement('section');
      box.id = 'box-' + id;
      box.className = small ? 'chart small' : 'chart';
      const h = document.createElement('h3');
      h.textContent = title;
      box.appendChild(h);
      root.appendChild(box);
    }
    // what the tests read: how many points each series has drawn
    box.dataset.series = String(names.length);
    box.dataset.points = names.map((_, i) => data[i + 1].filter((v) => v !== null && v !== undefined).length).join(',');
    box.dataset.names = names.join(',');
    const key = id + '|' + names.join(',');
    const width = Math.max(240, (small ? root.clientWidth / 4 : root.clientWidth) - 24);
    const old = charts.get(id);
    if (old && old.key === key) {
      old.u.setData(data);
      old.u.setSize({ width, height: small ? 120 : 200 });
      return;
    }
    if (old) old.u.destroy();
    const colors = palette();
    const fg = css('--vscode-foreground', '#ccc');
    const grid = css('--vscode-editorWidget-border', '#444');
    const u = new uPlot(
      {
        width,
        height: small ? 120 : 200,
        plugins: [markPlugin(marks)],
        legend: { show: !small },
        axes: [
          { stroke: fg, grid: { stroke: grid, width: 1 } },
          { stroke: fg, grid: { stroke: grid, width: 1 } },
        ],
        series: [{}, ...names.map((n, i) => ({ label: n, stroke: colors[i % colors.length], width: 1.5, spanGaps: false }))],
      },
      data,
      box,
    );
    charts.set(id, { u, key });
  }

  function render(msg) {
    const s = msg.samples;
    const t = s.map((x) => Date.parse(x.time) / 1000);
    const marks = (msg.transitions || []).map((x) => ({ t: Date.parse(x.time) / 1000, bad: !x.ok }));
    const ports = [...new Set(s.flatMap((x) => (x.servers || []).map((v) => v.port)))].sort((a, b) => a - b);
    const per = (f) =>
      ports.map((p) =>
        s.map((x) => {
          const v = (x.servers || []).find((y) => y.port === p);
          return v ? f(v) : null;
        }),
      );
    chart(
      'tps',
      'Throughput (tok/s) per server',
      ports.map((p) => ':' + p),
      [t, ...per((v) => v.genThroughput)],
      marks,
    );
    chart(
      'run',
      'Running requests per server',
      ports.map((p) => ':' + p),
      [t, ...per((v) => v.runningReqs)],
      marks,
    );
    chart(
      'queue',
      'Queued requests per server',
      ports.map((p) => ':' + p),
      [t, ...per((v) => v.queueReqs)],
      marks,
    );
    chart(
      'usage',
      'KV token usage per server',
      ports.map((p) => ':' + p),
      [t, ...per((v) => v.tokenUsage)],
      marks,
    );
    chart(
      'accept',
      'Accept length per server',
      ports.map((p) => ':' + p),
      [t, ...per((v) => v.acceptLen)],
      marks,
    );
    // The data guard's shares over time (issue 26): the worst output file of each sample, in %.
    if (s.some((x) => Array.isArray(x.data) && x.data.length)) {
      const worst = (k) =>
        s.map((x) =>
          Array.isArray(x.data) && x.data.length
            ? 100 * Math.max(...x.data.map((f) => (f && f.shares && typeof f.shares[k] === 'number' ? f.shares[k] : 0)))
            : null,
        );
      chart(
        'data',
        'Data quality: % of the sampled answers (worst file)',
        ['empty', 'same answer', 'looping', 'cut at length'],
        [t, worst('empty'), worst('topResponse'), worst('repetitive'), worst('truncated')],
        marks,
      );
    }
    const gpus = [...new Set(s.flatMap((x) => (x.gpus || []).map((g) => g.index)))].sort((a, b) => a - b);
    for (const g of gpus) {
      const col = (f) =>
        s.map((x) => {
          const v = (x.gpus || []).find((y) => y.index === g);
          return v ? f(v) : null;
        });
      chart(
        'gpu' + g,
        'GPU ' + g + ': util %, memory %, power W/10, °C',
        ['util', 'mem', 'power/10', 'temp'],
        [
          t,
          col((v) => v.utilizationPct),
          col((v) => (v.memoryTotalMiB ? (100 * v.memoryUsedMiB) / v.memoryTotalMiB : null)),
          col((v) => (v.powerW === null ? null : v.powerW / 10)),
          col((v) => v.temperatureC),
        ],
        marks,
        true,
      );
    }
    summary.textContent = msg.summary || '';
    document.body.dataset.samples = String(s.length);
  }

  window.addEventListener('message', (e) => {
    if (e.data && e.data.type === 'data') render(e.data);
  });
  vscode.postMessage({ type: 'ready' });
})();
