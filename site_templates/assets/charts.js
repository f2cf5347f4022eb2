/* Draw every chart of the page: each div[data-chart] holds its figure as JSON in a <template>.
   Runs on a direct load and again after mkdocs-material's instant navigation (document$). */
(function () {
  "use strict";
  function draw() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("div[data-chart]").forEach(function (div) {
      if (div.dataset.drawn === "1") return;
      var tpl = div.querySelector("template");
      if (!tpl) return;
      var fig = JSON.parse(tpl.content.textContent || tpl.textContent);
      var config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] };
      Plotly.newPlot(div, fig.data, fig.layout, config);
      div.dataset.drawn = "1";
    });
  }
  if (typeof document$ !== "undefined" && document$.subscribe) document$.subscribe(draw);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
