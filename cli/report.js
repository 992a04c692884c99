// cli/report.js: the curves of the page `memstub report` writes, inline in
// it after their data (MS_DATA, cli/report_curves.c). One canvas per panel
// and one time axis for all of them: drag across a panel to zoom every panel
// into that span, turn the wheel over one to zoom around the pointer,
// double-click one (or press "show all") to see the whole run again. Each
// panel's value axis fits what is in view; the view stays in the page's
// address (#t=FROM,TO, in ns), so a link or a reload keeps it. No library
// and no network: the page is one file.
(function () {
  'use strict';
  var D = window.MS_DATA;
  // The original: a thick grey band drawn first; each replay a thin line
  // of its own colour and dashes on top (as memstub plot draws them).
  var COLOR = ['#a0a0a0', '#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2'];
  var DASH = [[], [], [8, 3], [2, 2], [8, 3, 2, 3], [12, 4], [4, 4], [1, 3]];
  var MARGIN = {l: 84, r: 18, t: 10, b: 30};  // the plot area inside a canvas, CSS pixels
  var UNITS = {
    B: [['B', 1], ['KiB', 1024], ['MiB', 1048576], ['GiB', 1073741824], ['TiB', 1099511627776]],
    ns: [['ns', 1], ['\u00b5s', 1e3], ['ms', 1e6], ['s', 1e9]],
    '': [['', 1], ['k', 1e3], ['M', 1e6], ['G', 1e9]]
  };
  var view = {x0: D.x0, x1: D.x1};
  var panels = [];
  var drag = null;

  function pick(list, i) { return list[i % list.length]; }

  // The trace's name as the page's table of files gives it.
  function label(t) {
    var row = document.querySelector('#files tr[data-trace="' + t + '"]');
    if (!row) return 'trace ' + t;
    return row.querySelector('.role').textContent + ' ' + row.querySelector('.path').textContent;
  }

  // The largest unit of kind in which v reads at least 1 (times: at least 2,
  // as memstub plot's axes read).
  function unitFor(kind, v) {
    var list = UNITS[kind], u = list[0], least = kind === 'ns' ? 2 : 1;
    for (var i = 0; i < list.length; i++)
      if (Math.abs(v) >= least * list[i][1]) u = list[i];
    return u;
  }

  // A tic step of 1, 2 or 5 times a power of ten: about n intervals over span.
  function tick(span, n) {
    var raw = span / Math.max(n, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function decimals(step) { return Math.max(0, Math.min(9, -Math.floor(Math.log10(step) + 1e-9))); }

  function withUnit(text, u) { return u[0] ? text + ' ' + u[0] : text; }

  // A value for people: three significant digits in its own unit.
  function human(v, kind) {
    var u = unitFor(kind, v), x = v / u[1];
    var d = u[1] === 1 || Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
    return withUnit(x.toFixed(d), u);
  }

  // The first index of the increasing array a whose value is at least v.
  function lower(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (a[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // The points of s to draw: those in view and one on each side.
  function inView(s) {
    return [Math.max(0, lower(s.x, view.x0) - 1), Math.min(s.x.length, lower(s.x, view.x1) + 1)];
  }

  function area(P) {
    return {w: P.canvas.clientWidth - MARGIN.l - MARGIN.r, h: P.canvas.clientHeight - MARGIN.t - MARGIN.b};
  }

  function xOf(P, x) { return MARGIN.l + (x - view.x0) / (view.x1 - view.x0) * area(P).w; }

  // The time under a pointer at clientX, within the view.
  function timeAt(P, clientX) {
    var box = P.canvas.getBoundingClientRect();
    var f = (clientX - box.left - MARGIN.l) / area(P).w;
    return view.x0 + Math.max(0, Math.min(1, f)) * (view.x1 - view.x0);
  }

  function axes(g, P, ymax) {
    var a = area(P), uy = unitFor(P.data.unit, ymax), ux = unitFor('ns', Math.max(Math.abs(view.x0), Math.abs(view.x1)));
    g.font = '11px sans-serif';
    g.fillStyle = '#333';
    g.strokeStyle = '#e4e4e4';
    g.lineWidth = 1;
    var sy = tick(ymax / uy[1], 4), dy = decimals(sy);
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (var v = 0; v * uy[1] <= ymax * 1.0001; v += sy) {
      var y = MARGIN.t + a.h - v * uy[1] / ymax * a.h;
      g.beginPath(); g.moveTo(MARGIN.l, y); g.lineTo(MARGIN.l + a.w, y); g.stroke();
      g.fillText(withUnit(v.toFixed(dy), uy), MARGIN.l - 6, y);
    }
    var span = (view.x1 - view.x0) / ux[1], sx = tick(span, a.w / 110), dx = decimals(sx);
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (var t = Math.ceil(view.x0 / ux[1] / sx) * sx; t <= view.x1 / ux[1] + sx * 1e-6; t += sx) {
      var x = xOf(P, t * ux[1]);
      g.beginPath(); g.moveTo(x, MARGIN.t); g.lineTo(x, MARGIN.t + a.h); g.stroke();
      g.fillText(withUnit(t.toFixed(dx), ux), x, MARGIN.t + a.h + 6);
    }
  }

  function curve(g, P, s, ymax) {
    var a = area(P), r = inView(s), first = true, prev = 0;
    g.strokeStyle = pick(COLOR, s.trace);
    g.lineWidth = s.trace ? 1.6 : 5;
    g.setLineDash(pick(DASH, s.trace));
    g.lineJoin = 'round';
    g.beginPath();
    for (var i = r[0]; i < r[1]; i++) {
      var x = xOf(P, s.x[i]), y = MARGIN.t + a.h - s.y[i] / ymax * a.h;
      if (first) g.moveTo(x, y);
      else if (P.data.step) { g.lineTo(x, prev); g.lineTo(x, y); }
      else g.lineTo(x, y);
      first = false;
      prev = y;
    }
    g.stroke();
    g.setLineDash([]);
  }

  function draw(P) {
    var c = P.canvas, dpr = window.devicePixelRatio || 1;
    var w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    var g = c.getContext('2d'), a = area(P);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    var ymax = 0;
    P.data.series.forEach(function (s) {
      var r = inView(s);
      for (var i = r[0]; i < r[1]; i++) ymax = Math.max(ymax, s.y[i]);
    });
    ymax = ymax > 0 ? ymax * 1.08 : 1;
    axes(g, P, ymax);
    g.save();
    g.beginPath();
    g.rect(MARGIN.l, MARGIN.t, a.w, a.h);
    g.clip();
    P.data.series.forEach(function (s) { curve(g, P, s, ymax); });
    if (drag && drag.P === P) {
      var x0 = xOf(P, Math.min(drag.a, drag.b)), x1 = xOf(P, Math.max(drag.a, drag.b));
      g.fillStyle = 'rgba(31, 119, 180, 0.18)';
      g.fillRect(x0, MARGIN.t, x1 - x0, a.h);
    }
    g.restore();
    g.strokeStyle = '#666';
    g.lineWidth = 1;
    g.strokeRect(MARGIN.l + 0.5, MARGIN.t + 0.5, a.w, a.h);
  }

  function drawAll() { panels.forEach(draw); }

  // Show [x0, x1] (ns) in every panel, within the run and at least 10 ns wide;
  // the address follows unless quiet (the first view: a link to #sites stays).
  function setView(x0, x1, quiet) {
    x0 = Math.max(D.x0, x0);
    x1 = Math.min(D.x1, x1);
    if (!(x1 - x0 >= 10)) {
      var mid = (x0 + x1) / 2;
      x0 = Math.max(D.x0, mid - 5);
      x1 = Math.min(D.x1, x0 + 10);
    }
    view.x0 = x0;
    view.x1 = x1;
    drawAll();
    var all = view.x0 === D.x0 && view.x1 === D.x1;
    document.getElementById('view').textContent =
        (all ? 'the whole run: ' : 'zoomed to ') + human(view.x0, 'ns') + ' to ' + human(view.x1, 'ns') +
        (all ? '' : ' of ' + human(D.x0, 'ns') + ' to ' + human(D.x1, 'ns'));
    if (quiet || (all && !/^#t=/.test(location.hash))) return;
    try {
      history.replaceState(null, '', all ? location.pathname : '#t=' + Math.round(x0) + ',' + Math.round(x1));
    } catch (e) {
      // A page opened where the address cannot change keeps its view all the same.
    }
  }

  // The value of s at time t: its last point at or before t.
  function valueAt(s, t) {
    var i = lower(s.x, t);
    if (i < s.x.length && s.x[i] === t) return s.y[i];
    return i > 0 ? s.y[i - 1] : null;
  }

  function readout(P, t) {
    var parts = P.data.series.map(function (s) {
      var v = valueAt(s, t);
      return label(s.trace) + ' ' + (v === null ? '\u2013' : human(v, P.data.unit));
    });
    P.readout.textContent = 'at ' + human(t, 'ns') + ': ' + parts.join(' \u00b7 ');
  }

  function legend(P) {
    P.data.series.forEach(function (s) {
      var item = document.createElement('span'), sw = document.createElement('canvas');
      sw.width = 36;
      sw.height = 10;
      var g = sw.getContext('2d');
      g.strokeStyle = pick(COLOR, s.trace);
      g.lineWidth = s.trace ? 1.6 : 5;
      g.setLineDash(pick(DASH, s.trace));
      g.beginPath(); g.moveTo(0, 5); g.lineTo(36, 5); g.stroke();
      item.appendChild(sw);
      item.appendChild(document.createTextNode(' ' + label(s.trace)));
      P.legend.appendChild(item);
    });
  }

  function listen(P) {
    var c = P.canvas;
    c.addEventListener('mousedown', function (e) {
      if (e.button !== 0) return;
      var t = timeAt(P, e.clientX);
      drag = {P: P, a: t, b: t};
      e.preventDefault();
    });
    c.addEventListener('mousemove', function (e) { if (!drag) readout(P, timeAt(P, e.clientX)); });
    c.addEventListener('mouseleave', function () { P.readout.textContent = '\u00a0'; });
    c.addEventListener('dblclick', function () { setView(D.x0, D.x1); });
    c.addEventListener('wheel', function (e) {
      e.preventDefault();
      var t = timeAt(P, e.clientX), f = e.deltaY > 0 ? 1.25 : 0.8;
      setView(t - (t - view.x0) * f, t + (view.x1 - t) * f);
    }, {passive: false});
  }

  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    drag.b = timeAt(drag.P, e.clientX);
    draw(drag.P);
  });
  window.addEventListener('mouseup', function () {
    if (!drag) return;
    var d = drag;
    drag = null;
    // A click is no zoom: the span must be a few pixels wide.
    if (Math.abs(xOf(d.P, d.a) - xOf(d.P, d.b)) > 3) setView(Math.min(d.a, d.b), Math.max(d.a, d.b));
    else draw(d.P);
  });
  window.addEventListener('resize', drawAll);

  D.panels.forEach(function (data) {
    var el = document.getElementById('panel-' + data.id);
    if (!el) return;
    var P = {data: data, canvas: el.querySelector('canvas.plot'), legend: el.querySelector('.legend'),
             readout: el.querySelector('.readout')};
    panels.push(P);
    legend(P);
    listen(P);
  });
  document.getElementById('show-all').addEventListener('click', function () { setView(D.x0, D.x1); });
  var m = /^#t=(-?[0-9.]+),(-?[0-9.]+)$/.exec(location.hash);
  if (m && Number(m[2]) > Number(m[1])) setView(Number(m[1]), Number(m[2]), true);
  else setView(D.x0, D.x1, true);
  // What was drawn, and how tall a window shows the whole page (for a
  // screenshot: tests/test_report_browser.c, docs/gallery/make.sh).
  document.body.setAttribute('data-drawn', String(panels.length));
  document.body.setAttribute('data-height', String(document.documentElement.scrollHeight));
})();
