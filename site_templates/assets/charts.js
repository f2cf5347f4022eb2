/* Draw the charts of the page: each div[data-chart] holds its figure as JSON in a <template>.
   plotly.js (4.8 MB) is loaded only when a chart comes near the viewport, after the page is
   usable, so pages whose charts are never scrolled to never fetch it. Runs on a direct load and
   again after mkdocs-material's instant navigation (document$).
   For print, each figure also gets its data as a table (shown only in print, in place of the
   chart, which may never have been drawn): built from the same figure JSON after load. */
(function () {
  "use strict";
  var me = document.currentScript;
  var src = me && me.dataset.plotly;
  var loading = null, waiting = [];
  var MODEBAR = ["toImage", "zoom2d", "pan2d", "zoomIn2d", "zoomOut2d", "resetScale2d"];
  function loadPlotly() {
    if (typeof Plotly !== "undefined") return Promise.resolve();
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src; s.async = true;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error("could not load " + src)); };
        document.head.append(s);
      });
    }
    return loading;
  }
  function drawOne(div) {
    if (div.dataset.drawn === "1") return;
    var tpl = div.querySelector("template");
    if (!tpl) return;
    var fig = JSON.parse(tpl.content.textContent || tpl.textContent);
    // the mode bar shows exactly these buttons (an allowlist: a button a new plotly.js adds,
    // such as one that uploads the chart, never appears), all local to the page
    var config = { displaylogo: false, responsive: true, showSendToCloud: false,
      showEditInChartStudio: false, showLink: false, modeBarButtons: [MODEBAR.slice()] };
    if (div.clientWidth < 600) {  // a phone: smaller text, so titles and labels stay inside
      fig.layout.font = Object.assign({}, fig.layout.font, { size: 10 });
      if (fig.layout.title && fig.layout.title.font) fig.layout.title.font.size = 11;
      config.displayModeBar = false;
    }
    div.dataset.drawn = "1";
    Plotly.newPlot(div, fig.data, fig.layout, config);
  }
  // --- print: the figure's data as a table ------------------------------------------------------
  function plain(t) {  // plotly text may hold entities and <br>/<sub>: their text only, never markup
    if (t === undefined || t === null) return "";
    return new DOMParser().parseFromString(String(t).replace(/<br\s*\/?>/gi, " — "), "text/html").body.textContent;
  }
  function cell(tag, text, attrs) {
    var c = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { c.setAttribute(k, attrs[k]); });
    c.textContent = text;
    return c;
  }
  function rowsOf(fig) {
    var xt = plain(((fig.layout.xaxis || {}).title || {}).text) || "x";
    var yt = plain(((fig.layout.yaxis || {}).title || {}).text);
    var heat = fig.data.filter(function (t) { return t.type === "heatmap"; })[0];
    if (heat) {
      return { head: [yt].concat(heat.x.map(plain)), rows: heat.y.map(function (y, i) {
        return [plain(y)].concat(heat.x.map(function (_, j) { return plain(heat.text ? heat.text[i][j] : heat.z[i][j]); }));
      }) };
    }
    var rows = [];
    fig.data.forEach(function (t) {
      (t.x || []).forEach(function (x, i) {
        var text = Array.isArray(t.text) ? plain(t.text[i]) : "";
        rows.push([plain(t.name || ""), typeof x === "number" ? x.toLocaleString("en-US") : plain(x), plain(t.y[i]), text]);
      });
    });
    return { head: ["series", xt, yt || "value", "detail"], rows: rows };
  }
  function printTable(div) {
    var fig = div.parentNode.querySelector(".aicr-print-only");
    if (fig) return;
    var tpl = div.querySelector("template");
    if (!tpl) return;
    var f = JSON.parse(tpl.content.textContent || tpl.textContent), data = rowsOf(f);
    var box = document.createElement("div"), t = document.createElement("table"), thead = document.createElement("thead");
    var tb = document.createElement("tbody"), hr = document.createElement("tr");
    box.className = "aicr-print-only";
    box.append(cell("p", "The chart is printed as its data:"));
    t.className = "aicr-t";
    t.append(cell("caption", plain((f.layout.title || {}).text) || "Chart data"), thead, tb);
    thead.append(hr);
    data.head.forEach(function (h) { hr.append(cell("th", h, { scope: "col" })); });
    data.rows.forEach(function (r) {
      var tr = document.createElement("tr");
      r.forEach(function (v, i) { tr.append(cell(i ? "td" : "th", v, i ? {} : { scope: "row" })); });
      tb.append(tr);
    });
    box.append(t);
    div.after(box);
  }
  function printTables() {
    document.querySelectorAll("div[data-chart]").forEach(function (d) {
      try { printTable(d); } catch (e) { d.setAttribute("data-print-error", e.message); }
    });
  }
  window.addEventListener("beforeprint", printTables);
  function want(div) {
    waiting.push(div);
    loadPlotly().then(function () { waiting.splice(0).forEach(drawOne); }, function (e) {
      div.setAttribute("data-error", e.message);
    });
  }
  function setup() {
    var divs = Array.prototype.slice.call(document.querySelectorAll("div[data-chart]"))
      .filter(function (d) { return d.dataset.drawn !== "1" && d.dataset.watched !== "1"; });
    if (!divs.length) return;
    if (!("IntersectionObserver" in window)) { divs.forEach(want); return; }
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (en.isIntersecting) { io.unobserve(en.target); want(en.target); }
      });
    }, { rootMargin: "200px 0px" });
    divs.forEach(function (d) { d.dataset.watched = "1"; io.observe(d); });
  }
  function start() {
    // after the page is usable: the first paint and the page's own scripts come first
    function later() { setTimeout(setup, 0); setTimeout(printTables, 0); }
    if (document.readyState === "complete") later();
    else window.addEventListener("load", later, { once: true });
  }
  if (typeof document$ !== "undefined" && document$.subscribe) document$.subscribe(start);
  else start();
})();
