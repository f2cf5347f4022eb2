/* The dashboard: a faceted, sortable table over api/v1/recipes.json (one row per leaf recipe x
   scale profile) with each row's qualification summary, a node-count finder, search over every
   field, facet counts, an empty state that says which filter to relax, CSV export of the view,
   and the view kept in the URL query string. */
(function () {
  "use strict";
  var FACETS = ["service", "accelerator", "os", "intent", "platform", "profile", "health", "consensus"];
  var COLS = [["name", "Recipe"], ["criteria", "Criteria"], ["profile", "Scale profile"], ["health", "Health"],
    ["consensus", "Consensus"], ["ceilingNodes", "Scale ceiling"], ["summary", "Qualification summary"],
    ["last", "Last evidence"]];
  var CSV_COLS = ["name", "service", "accelerator", "os", "intent", "platform", "profile", "band", "health",
    "consensus", "ceiling", "ceilingNodes", "last", "sample", "summary", "url", "evidenceUrl"];
  var root = document.getElementById("aicr-dashboard");
  if (!root || root.dataset.ready === "1") return;
  root.dataset.ready = "1";
  var base = root.dataset.base || "";
  var rows = [], state = {}, bands = [], values = {}, order = [];
  // Rows drawn at once: the table stays fast at thousands of rows; "Show more" draws the next page.
  var PAGE = 100, limit = PAGE;
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  function label(f) { return f === "os" ? "OS" : f === "profile" ? "Scale profile" : f[0].toUpperCase() + f.slice(1); }
  function readUrl() {
    var p = new URLSearchParams(location.search);
    state = { q: p.get("search") || "", sort: p.get("sort") || "name", dir: p.get("dir") === "desc" ? "desc" : "asc",
      nodes: p.get("nodes") || "" };
    FACETS.forEach(function (f) { state[f] = p.get(f) || ""; });
  }
  function writeUrl() {
    var p = new URLSearchParams();
    if (state.q) p.set("search", state.q);  // not "q": the theme opens its site search on ?q=
    if (state.nodes) p.set("nodes", state.nodes);
    FACETS.forEach(function (f) { if (state[f]) p.set(f, state[f]); });
    if (state.sort !== "name" || state.dir !== "asc") { p.set("sort", state.sort); p.set("dir", state.dir); }
    var qs = p.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
  }

  // --- the node-count finder: never selects silently ------------------------------------------
  var finder = el("form", { class: "aicr-finder", role: "search", "aria-label": "Find the scale profile for a node count" });
  var nodesIn = el("input", { type: "number", id: "aicr-nodes", min: "1", step: "1", inputmode: "numeric", placeholder: "e.g. 2304" });
  finder.append(el("label", { for: "aicr-nodes" }, "My cluster has this many GPU nodes:"), nodesIn,
    el("button", { type: "submit", class: "md-button" }, "Find my profile"));
  var finderMsg = el("p", { class: "aicr-finder-msg", id: "aicr-finder-msg", role: "status", "aria-live": "polite" });
  function covering(n) {
    return bands.filter(function (b) { return b.nodes.min <= n && n <= b.nodes.max; })
      .sort(function (a, b) { return (a.nodes.max - a.nodes.min) - (b.nodes.max - b.nodes.min) || (a.name < b.name ? -1 : 1); });
  }
  function bandText(b) { return fmt(b.nodes.min) + "–" + fmt(b.nodes.max) + " nodes"; }
  function applyNodes(select) {
    var text = state.nodes, n = Number(text);
    if (!text) { finderMsg.textContent = ""; return; }
    if (!/^[0-9]+$/.test(text) || n < 1) {
      finderMsg.textContent = "“" + text + "” is not a node count: give a whole number of GPU nodes. The profile filter is unchanged.";
      return;
    }
    var hits = covering(n), all = bands.map(function (b) { return b.name + " " + bandText(b); }).join(", ");
    if (!hits.length) {
      finderMsg.textContent = "No scale profile covers " + fmt(n) + " nodes (the bands are: " + all +
        "). The profile filter is unchanged; no recipe is defined for that size yet.";
      return;
    }
    var pick = hits[0];
    if (select) state.profile = pick.name;
    var why = fmt(n) + " nodes is inside the band of scale profile " + pick.name + " (" + bandText(pick) + ")";
    if (hits.length > 1) why += "; it is also inside " + hits.slice(1).map(function (b) { return b.name + " (" + bandText(b) + ")"; }).join(", ") + ", and " + pick.name + " is the narrowest";
    finderMsg.textContent = why + (state.profile === pick.name ? ". The table is filtered to profile " + pick.name + "."
      : ". The profile filter is set to “" + (state.profile || "all") + "” by hand, not to " + pick.name + ".") + scope(pick.name);
  }
  // Which accelerators and services a profile exists for, from the catalog's rows themselves: a
  // profile that only some recipes have is said to be so, with the ones that lack it.
  function scope(name) {
    var has = {}, all = {};
    rows.forEach(function (r) {
      var k = r.accelerator + " on " + r.service;
      all[k] = 1;
      if (r.profile === name) has[k] = (has[k] || 0) + 1;
    });
    var lacking = Object.keys(all).filter(function (k) { return !has[k]; }).sort();
    if (!lacking.length) return " Every accelerator and service of the catalog has a recipe at " + name + ".";
    var n = Object.keys(has).reduce(function (t, k) { return t + has[k]; }, 0);
    return " " + name + " exists only for " + Object.keys(has).sort().join(", ") + " (" + n + " row" + (n === 1 ? "" : "s") +
      "); " + lacking.join(", ") + " have no recipe at this profile, so no row of theirs covers this size.";
  }
  finder.addEventListener("submit", function (e) { e.preventDefault(); state.nodes = nodesIn.value.trim(); applyNodes(true); update(); });
  nodesIn.addEventListener("change", function () { state.nodes = nodesIn.value.trim(); applyNodes(true); update(); });

  // --- search and facets -------------------------------------------------------------------------
  var search = el("input", { type: "search", id: "aicr-q", placeholder: "e.g. gb300 eks slurm", autocomplete: "off",
    "aria-describedby": "aicr-q-help" });
  var form = el("form", { class: "aicr-controls", role: "search", "aria-label": "Filter recipes" });
  var box = el("div", { class: "aicr-control" });
  box.append(el("label", { for: "aicr-q" }, "Search every field"), search,
    el("span", { id: "aicr-q-help", class: "aicr-help" }, "Every word must match: name, criteria, profile, status, signer or summary."));
  form.append(box);
  var selects = {};
  FACETS.forEach(function (f) {
    var c = el("div", { class: "aicr-control" }), s = el("select", { id: "aicr-f-" + f, name: f });
    c.append(el("label", { for: "aicr-f-" + f }, label(f)), s);
    form.append(c); selects[f] = s;
    s.addEventListener("change", function () { state[f] = s.value; if (f === "profile") applyNodes(false); update(); });
  });
  var reset = el("button", { type: "reset", class: "md-button" }, "Clear filters");
  form.append(reset);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  form.addEventListener("reset", function (e) {
    e.preventDefault(); state.q = ""; search.value = ""; state.nodes = ""; nodesIn.value = "";
    FACETS.forEach(function (f) { state[f] = ""; }); applyNodes(false); update();
  });
  search.addEventListener("input", function () { state.q = search.value.trim(); update(); });
  var status = el("p", { class: "aicr-count", role: "status", "aria-live": "polite" });
  var empty = el("div", { class: "aicr-empty", id: "aicr-empty", hidden: "" });
  var actions = el("div", { class: "aicr-actions" });
  var csv = el("button", { type: "button", class: "md-button", id: "aicr-csv" }, "Download this view as CSV");
  actions.append(csv);
  var table = el("table", { id: "aicr-table" }), thead = el("thead"), tbody = el("tbody"), htr = el("tr");
  table.append(el("caption", {}, "Leaf recipes by scale profile, each with its qualification summary"), thead, tbody); thead.append(htr);
  COLS.forEach(function (c) {
    var th = el("th", { scope: "col" });
    if (c[0] === "summary") th.textContent = c[1];
    else {
      var b = el("button", { type: "button", "data-sort": c[0] }, c[1]);
      b.addEventListener("click", function () {
        state.dir = state.sort === c[0] && state.dir === "asc" ? "desc" : "asc"; state.sort = c[0]; update();
      });
      th.append(b);
    }
    htr.append(th);
  });
  var wrap = el("div", { class: "aicr-table-wrap", tabindex: "0", role: "region", "aria-label": "Recipes table" }); wrap.append(table);
  var more = el("button", { type: "button", class: "md-button", id: "aicr-more", hidden: "" }, "Show more");
  more.addEventListener("click", function () { limit += PAGE; draw(); });
  root.append(finder, finderMsg, form, status, empty, actions, wrap, more);

  function matches(r, words) {
    for (var i = 0; i < words.length; i++) if (r.hay.indexOf(words[i]) < 0) return false;
    return true;
  }
  function passes(r, words, skip) {
    if (skip !== "q" && !matches(r, words)) return false;
    for (var i = 0; i < FACETS.length; i++) {
      var f = FACETS[i];
      if (f !== skip && state[f] && r[f] !== state[f]) return false;
    }
    return true;
  }
  function rank(k, v) {
    if (v === "" || v === null || v === undefined) return null;
    if (k === "consensus") { var i = order.indexOf(v); return i < 0 ? order.length : i; }
    if (k === "health") return ["pass", "warn", "fail"].indexOf(v);
    return v;
  }
  var shown = [];
  function update() {
    limit = PAGE;
    // One pass over the rows: a row that fails no facet counts for every facet and is shown; a
    // row that fails exactly one facet counts only for that facet (its options ignore themselves).
    var counts = {}, totals = {}, words = state.q ? state.q.toLowerCase().split(/\s+/).filter(Boolean) : [];
    FACETS.forEach(function (f) { counts[f] = {}; totals[f] = 0; });
    shown = [];
    rows.forEach(function (r) {
      if (words.length && !matches(r, words)) return;
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
    var unknown = [];
    FACETS.forEach(function (f) {
      var s = selects[f], c = counts[f], opts = values[f].slice();
      if (state[f] && opts.indexOf(state[f]) < 0) { opts.push(state[f]); unknown.push(label(f) + " “" + state[f] + "”"); }
      s.replaceChildren(el("option", { value: "" }, "all (" + totals[f] + ")"));
      // every value stays listed, with 0 when the other filters leave it no row
      opts.forEach(function (v) { s.append(el("option", { value: v }, v + " (" + (c[v] || 0) + ")")); });
      s.value = state[f];
    });
    var k = state.sort, d = state.dir === "asc" ? 1 : -1;
    shown.sort(function (a, b) {
      var x = rank(k, a[k]), y = rank(k, b[k]);
      if (x === null && y !== null) return 1;  // empty values sort last in both directions
      if (y === null && x !== null) return -1;
      return (x < y ? -d : x > y ? d : 0) || (a.key < b.key ? -1 : 1);
    });
    htr.querySelectorAll("th").forEach(function (th, i) {
      th.setAttribute("aria-sort", COLS[i][0] === k ? (d > 0 ? "ascending" : "descending") : "none");
    });
    drawEmpty(words, unknown);
    draw();
    writeUrl();
  }
  function drawEmpty(words, unknown) {
    if (shown.length || !rows.length) { empty.hidden = true; empty.replaceChildren(); return; }
    var tips = [];
    if (words.length) {
      var n = rows.filter(function (r) { return passes(r, words, "q"); }).length;
      tips.push("clear the search “" + state.q + "” (" + n + " row" + (n === 1 ? "" : "s") + " without it)");
    }
    FACETS.forEach(function (f) {
      if (!state[f]) return;
      var n = rows.filter(function (r) { return passes(r, words, f); }).length;
      tips.push("set " + label(f) + " back to all (" + n + " row" + (n === 1 ? "" : "s") + " without “" + state[f] + "”)");
    });
    empty.replaceChildren(el("p", {}, "No recipe × profile row matches these filters." +
      (unknown.length ? " Not a value of any recipe: " + unknown.join(", ") + "." : "")));
    var ul = el("ul");
    tips.forEach(function (t) { ul.append(el("li", {}, "To widen the view, " + t + ".")); });
    empty.append(ul);
    empty.hidden = false;
  }
  function chip(kind, v) {
    var a = el("a", { class: "aicr-chip aicr-" + String(v).toLowerCase(), href: base + "legend.html#" + kind + "-" + String(v).toLowerCase(),
      title: kind + " " + v + ": what it means" }, v);
    return a;
  }
  function draw() {
    var page = shown.slice(0, limit);
    tbody.replaceChildren.apply(tbody, page.map(function (r) {
      var tr = el("tr", { "data-key": r.key });
      COLS.forEach(function (c) {
        var cell = el("td", { "data-label": c[1] });
        if (c[0] === "name") {
          cell.append(el("a", { href: r.url + "#summary-" + encodeURIComponent(r.profile) }, r.name));
          cell.append(el("span", { class: "aicr-reasons" }),
            el("a", { class: "aicr-rowlink", href: base + "compare.html?a=" + encodeURIComponent(r.key), "aria-label": "Compare " + r.name + " at " + r.profile }, "compare"));
        } else if (c[0] === "profile") {
          cell.append(r.profile);
          if (r.band) cell.append(el("span", { class: "aicr-reasons" }, r.band));
        } else if (c[0] === "health") {
          cell.append(chip("health", r.health));
          if (r.reasons.length) cell.append(el("span", { class: "aicr-reasons" }, r.reasons.join("; ")));
        } else if (c[0] === "consensus") {
          cell.append(chip("consensus", r.consensus));
          if (r.sample) cell.append(" ", el("a", { class: "aicr-chip aicr-sample", href: base + "legend.html#term-sample",
            title: "sample evidence: demo data, qualifies nothing" }, "SAMPLE"));
        } else if (c[0] === "ceilingNodes") {
          cell.textContent = r.ceilingText;
        } else if (c[0] === "summary") {
          cell.className = "aicr-sum";
          cell.append(r.summary + " ");
          cell.append(el("a", { href: r.evidenceUrl, "aria-label": "Evidence for " + r.name }, "Evidence"));
        } else {
          cell.textContent = r[c[0]] || "—";
        }
        tr.append(cell);
      });
      return tr;
    }));
    status.textContent = shown.length + " of " + rows.length + " rows" +
      (page.length < shown.length ? " (first " + page.length + " shown)" : "");
    var rest = shown.length - page.length;
    more.hidden = rest <= 0;
    more.textContent = rest > 0 ? "Show " + Math.min(PAGE, rest) + " more of " + rest : "Show more";
    csv.disabled = shown.length === 0;
  }
  function csvCell(v) {
    var s = v === null || v === undefined ? "" : String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;  // never a formula in a spreadsheet
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  // The CSV's links are absolute (resolved against this page's address), so they work wherever the
  // file is opened; it starts with a UTF-8 byte order mark, without which Excel reads it as ANSI.
  function cell(r, c) { return csvCell(c === "url" || c === "evidenceUrl" ? new URL(r[c], location.href).href : r[c]); }
  csv.addEventListener("click", function () {
    var lines = [CSV_COLS.join(",")];
    shown.forEach(function (r) { lines.push(CSV_COLS.map(function (c) { return cell(r, c); }).join(",")); });
    var a = el("a", { href: URL.createObjectURL(new Blob(["\ufeff" + lines.join("\r\n") + "\r\n"], { type: "text/csv;charset=utf-8" })),
      download: "aicr-recipes.csv" });
    document.body.append(a); a.click(); a.remove();
  });
  readUrl(); search.value = state.q; nodesIn.value = state.nodes;
  status.textContent = "Loading recipes…";
  fetch(root.dataset.src).then(function (r) {
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.json();
  }).then(function (data) {
    bands = data.scaleProfiles || [];
    order = data.consensusOrder || [];
    data.recipes.forEach(function (rec) {
      rec.profiles.forEach(function (p) {
        var c = rec.criteria, s = p.summary || {};
        var row = { key: rec.name + "@" + p.name, name: rec.name, url: base + rec.url, evidenceUrl: base + rec.evidenceUrl,
          service: c.service, accelerator: c.accelerator, os: c.os, intent: c.intent, platform: c.platform,
          criteria: [c.service, c.accelerator, c.os, c.intent, c.platform].join(" · "),
          profile: p.name, band: p.band || "", health: rec.health, reasons: rec.healthReasons || [],
          consensus: p.consensus, ceiling: p.ceiling || "", ceilingNodes: p.ceilingNodes,
          ceilingText: p.ceiling ? p.ceiling + " (" + fmt(p.ceilingNodes) + " nodes)" : "none",
          last: p.lastEvidence || "", sample: !!s.sample, summary: s.text || "",
          signers: (s.signers || []).map(function (x) { return x.label + " " + (x.class || ""); }).join(" ") };
        row.hay = [row.name, row.criteria, row.profile, row.band, row.health, row.reasons.join(" "), row.consensus,
          row.ceiling, row.ceilingText, row.last, row.summary, row.signers, row.sample ? "sample" : "", rec.url].join(" \u0001 ").toLowerCase();
        rows.push(row);
      });
    });
    FACETS.forEach(function (f) {
      var seen = {};
      rows.forEach(function (r) { seen[r[f]] = 1; });
      values[f] = Object.keys(seen).sort(f === "consensus" ? function (a, b) { return rank("consensus", a) - rank("consensus", b); } : undefined);
    });
    applyNodes(!state.profile);
    update();
  }).catch(function (err) { status.textContent = "Could not load the recipe table: " + err.message; });
})();
