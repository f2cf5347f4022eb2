/* The dashboard: a faceted, sortable table over api/v1/recipes.json (one row per leaf recipe x
   scale profile), text search, facet counts, and the view kept in the URL query string. */
(function () {
  "use strict";
  var FACETS = ["service", "accelerator", "os", "intent", "platform", "profile", "health", "consensus"];
  var COLS = [["name", "Recipe"], ["service", "Service"], ["accelerator", "Accelerator"], ["os", "OS"],
    ["intent", "Intent"], ["platform", "Platform"], ["profile", "Scale profile"], ["health", "Health"],
    ["consensus", "Consensus"], ["ceilingNodes", "Scale ceiling"], ["last", "Last evidence"]];
  var root = document.getElementById("aicr-dashboard");
  if (!root || root.dataset.ready === "1") return;
  root.dataset.ready = "1";
  var rows = [], state = {};
  // Rows drawn at once: the table stays fast at thousands of rows; "Show more" draws the next page.
  var PAGE = 100, limit = PAGE;
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function readUrl() {
    var p = new URLSearchParams(location.search);
    state = { q: p.get("q") || "", sort: p.get("sort") || "name", dir: p.get("dir") === "desc" ? "desc" : "asc" };
    FACETS.forEach(function (f) { state[f] = p.get(f) || ""; });
  }
  function writeUrl() {
    var p = new URLSearchParams();
    if (state.q) p.set("q", state.q);
    FACETS.forEach(function (f) { if (state[f]) p.set(f, state[f]); });
    if (state.sort !== "name" || state.dir !== "asc") { p.set("sort", state.sort); p.set("dir", state.dir); }
    var qs = p.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
  }
  var search = el("input", { type: "search", id: "aicr-q", placeholder: "e.g. gb300-eks", autocomplete: "off" });
  var form = el("form", { class: "aicr-controls", role: "search", "aria-label": "Filter recipes" });
  var box = el("div", { class: "aicr-control" });
  box.append(el("label", { for: "aicr-q" }, "Search by name"), search);
  form.append(box);
  var selects = {};
  FACETS.forEach(function (f) {
    var c = el("div", { class: "aicr-control" }), s = el("select", { id: "aicr-f-" + f, name: f });
    c.append(el("label", { for: "aicr-f-" + f }, f === "os" ? "OS" : f[0].toUpperCase() + f.slice(1)), s);
    form.append(c); selects[f] = s;
    s.addEventListener("change", function () { state[f] = s.value; update(); });
  });
  var reset = el("button", { type: "reset", class: "md-button" }, "Clear filters");
  form.append(reset);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  form.addEventListener("reset", function (e) {
    e.preventDefault(); state.q = ""; search.value = ""; FACETS.forEach(function (f) { state[f] = ""; }); update();
  });
  search.addEventListener("input", function () { state.q = search.value.trim(); update(); });
  var status = el("p", { class: "aicr-count", role: "status", "aria-live": "polite" });
  var table = el("table", { id: "aicr-table" }), thead = el("thead"), tbody = el("tbody"), htr = el("tr");
  table.append(el("caption", {}, "Leaf recipes by scale profile"), thead, tbody); thead.append(htr);
  COLS.forEach(function (c) {
    var th = el("th", { scope: "col" }), b = el("button", { type: "button", "data-sort": c[0] }, c[1]);
    b.addEventListener("click", function () {
      state.dir = state.sort === c[0] && state.dir === "asc" ? "desc" : "asc"; state.sort = c[0]; update();
    });
    th.append(b); htr.append(th);
  });
  var wrap = el("div", { class: "aicr-table-wrap", tabindex: "0", role: "region", "aria-label": "Recipes table" }); wrap.append(table);
  var more = el("button", { type: "button", class: "md-button", id: "aicr-more", hidden: "" }, "Show more");
  more.addEventListener("click", function () { limit += PAGE; draw(); });
  root.append(form, status, wrap, more);
  var shown = [];
  function update() {
    limit = PAGE;
    // One pass over the rows: a row that fails no facet counts for every facet and is shown; a
    // row that fails exactly one facet counts only for that facet (its options ignore themselves).
    var counts = {}, totals = {}, q = state.q ? state.q.toLowerCase() : "";
    FACETS.forEach(function (f) { counts[f] = {}; totals[f] = 0; });
    shown = [];
    rows.forEach(function (r) {
      if (q && r.name.toLowerCase().indexOf(q) < 0) return;
      var failed = null, fails = 0;
      for (var i = 0; i < FACETS.length && fails < 2; i++) {
        var f = FACETS[i];
        if (state[f] && r[f] !== state[f]) { failed = f; fails++; }
      }
      if (fails === 0) {
        shown.push(r);
        FACETS.forEach(function (f) { counts[f][r[f]] = (counts[f][r[f]] || 0) + 1; totals[f]++; });
      } else if (fails === 1) {
        counts[failed][r[failed]] = (counts[failed][r[failed]] || 0) + 1; totals[failed]++;
      }
    });
    FACETS.forEach(function (f) {
      var s = selects[f], c = counts[f];
      if (state[f] && !(state[f] in c)) c[state[f]] = 0;
      s.replaceChildren(el("option", { value: "" }, "all (" + totals[f] + ")"));
      Object.keys(c).sort().forEach(function (v) { s.append(el("option", { value: v }, v + " (" + c[v] + ")")); });
      s.value = state[f];
    });
    var k = state.sort, d = state.dir === "asc" ? 1 : -1;
    shown.sort(function (a, b) { return (a[k] < b[k] ? -d : a[k] > b[k] ? d : 0) || (a.key < b.key ? -1 : 1); });
    htr.querySelectorAll("th").forEach(function (th, i) {
      th.setAttribute("aria-sort", COLS[i][0] === k ? (d > 0 ? "ascending" : "descending") : "none");
    });
    draw();
    writeUrl();
  }
  function draw() {
    var page = shown.slice(0, limit);
    tbody.replaceChildren.apply(tbody, page.map(function (r) {
      var tr = el("tr"), a = el("a", { href: r.url }, r.name), td = el("td", { "data-label": "Recipe" });
      td.append(a); tr.append(td);
      COLS.slice(1).forEach(function (c) {
        var cell = el("td", { "data-label": c[1] }), v = c[0] === "ceilingNodes" ? r.ceilingText : r[c[0]] || "—";
        if (c[0] === "health" || c[0] === "consensus") cell.append(el("span", { class: "aicr-chip aicr-" + String(v).toLowerCase() }, v));
        else cell.textContent = v;
        if (c[0] === "consensus" && r.sample) cell.append(" ", el("span", { class: "aicr-chip aicr-sample", title: "sample evidence: demo data, qualifies nothing" }, "SAMPLE"));
        tr.append(cell);
      });
      return tr;
    }));
    status.textContent = shown.length + " of " + rows.length + " rows" +
      (page.length < shown.length ? " (first " + page.length + " shown)" : "");
    more.hidden = page.length >= shown.length;
    more.textContent = "Show " + Math.min(PAGE, shown.length - page.length) + " more of " + (shown.length - page.length);
  }
  readUrl(); search.value = state.q;
  status.textContent = "Loading recipes…";
  fetch(root.dataset.src).then(function (r) {
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.json();
  }).then(function (data) {
    data.recipes.forEach(function (rec) {
      rec.profiles.forEach(function (p) {
        rows.push({ key: rec.name + "@" + p.name, name: rec.name, url: rec.url, service: rec.criteria.service,
          accelerator: rec.criteria.accelerator, os: rec.criteria.os, intent: rec.criteria.intent,
          platform: rec.criteria.platform, profile: p.name, health: rec.health, consensus: p.consensus,
          ceilingNodes: p.ceilingNodes, ceilingText: p.ceiling ? p.ceiling + " (" + p.ceilingNodes + " nodes)" : "none",
          last: p.lastEvidence || "", sample: rec.sample });
      });
    });
    update();
  }).catch(function (err) { status.textContent = "Could not load the recipe table: " + err.message; });
})();
