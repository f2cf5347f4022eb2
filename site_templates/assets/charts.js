/* Draw the charts of the page: each div[data-chart] holds its figure as JSON in a <template>.
   plotly.js (4.8 MB) is loaded only when a chart comes near the viewport, after the page is
   usable, so pages whose charts are never scrolled to never fetch it. Runs on a direct load and
   again after mkdocs-material's instant navigation (document$). */
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
    if (document.readyState === "complete") setTimeout(setup, 0);
    else window.addEventListener("load", function () { setTimeout(setup, 0); }, { once: true });
  }
  if (typeof document$ !== "undefined" && document$.subscribe) document$.subscribe(start);
  else start();
})();
