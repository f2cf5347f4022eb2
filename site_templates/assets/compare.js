/* Side by side: two recipe × profile rows of the catalog (?a=<recipe>@<profile>&b=...):
   status and summary, components and versions, the values the profile owns, and the ladder.
   Reads api/v1/recipes.json, the two recipes' api/v1/recipes/<name>.json and profiles.json. */
(function () {
  "use strict";
  var root = document.getElementById("aicr-compare");
  if (!root || root.dataset.ready === "1") return;
  root.dataset.ready = "1";
  var base = root.dataset.base || "";
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function json(url) {
    return fetch(base + url).then(function (r) { if (!r.ok) throw new Error(url + ": " + r.status); return r.json(); });
  }
  var form = el("form", { class: "aicr-controls", "aria-label": "Choose two rows to compare" });
  var sel = {};
  ["a", "b"].forEach(function (k) {
    var c = el("div", { class: "aicr-control" }), s = el("select", { id: "aicr-cmp-" + k });
    c.append(el("label", { for: "aicr-cmp-" + k }, k === "a" ? "Left: recipe × profile" : "Right: recipe × profile"), s);
    form.append(c); sel[k] = s;
  });
  var status = el("p", { class: "aicr-count", role: "status", "aria-live": "polite" });
  var out = el("div", { id: "aicr-cmp-out" });
  root.append(form, status, out);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  var index, profiles = {}, details = {};
  function table(caption, head, rows) {
    var wrap = el("div", { class: "aicr-table-wrap", tabindex: "0", role: "region", "aria-label": caption });
    var t = el("table", { class: "aicr-t" }), thead = el("thead"), tb = el("tbody"), tr = el("tr");
    t.append(el("caption", {}, caption), thead, tb); thead.append(tr);
    head.forEach(function (h) { tr.append(el("th", { scope: "col" }, h)); });
    rows.forEach(function (r) {
      var row = el("tr");
      if (r[1] !== r[2]) row.className = "aicr-diff";
      r.forEach(function (v, i) { row.append(el(i ? "td" : "th", i ? {} : { scope: "row" }, v === undefined || v === "" ? "—" : String(v))); });
      if (r[1] !== r[2]) row.lastChild.append(el("span", { class: "aicr-vh" }, " (differs)"));
      tb.append(row);
    });
    wrap.append(t);
    return wrap;
  }
  function pick(key) {
    var at = key.lastIndexOf("@"), name = key.slice(0, at), prof = key.slice(at + 1);
    var rec = index.recipes.filter(function (r) { return r.name === name; })[0];
    if (!rec) return Promise.reject(new Error("no recipe " + name));
    var p = details[rec.api] ? Promise.resolve(details[rec.api]) : json(rec.api).then(function (d) { details[rec.api] = d; return d; });
    return p.then(function (d) {
      var pv = d.profiles.filter(function (x) { return x.name === prof; })[0];
      if (!pv) throw new Error(name + " has no profile " + prof);
      return { rec: rec, d: d, p: pv };
    });
  }
  function draw() {
    var a = sel.a.value, b = sel.b.value;
    var p = new URLSearchParams(); p.set("a", a); p.set("b", b);
    history.replaceState(null, "", location.pathname + "?" + p.toString());
    status.textContent = "Loading…";
    Promise.all([pick(a), pick(b)]).then(function (x) {
      var L = x[0], R = x[1], head = ["", a, b];
      var rows = [["consensus", L.p.consensus, R.p.consensus], ["scale ceiling", L.p.ceiling || "none", R.p.ceiling || "none"],
        ["node band", L.p.band, R.p.band], ["health", L.rec.health, R.rec.health], ["recipe digest", L.p.digest, R.p.digest],
        ["summary", L.p.summary.text, R.p.summary.text]];
      var comps = {};
      [L, R].forEach(function (s, i) {
        (s.p.recipe.spec.componentRefs || []).forEach(function (c) {
          comps[c.name] = comps[c.name] || ["", ""]; comps[c.name][i] = c.version || "(no version)";
        });
      });
      var crow = Object.keys(comps).sort().map(function (n) { return [n, comps[n][0] || "not deployed", comps[n][1] || "not deployed"]; });
      var owned = {};
      [L, R].forEach(function (s, i) {
        ((profiles[s.p.name] || {}).ownedValues || []).forEach(function (v) {
          var k = v.component + " " + v.path;
          owned[k] = owned[k] || ["", ""]; owned[k][i] = JSON.stringify(v.value) + " (" + v.status + ")";
        });
      });
      var orow = Object.keys(owned).sort().map(function (k) { return [k, owned[k][0] || "not owned", owned[k][1] || "not owned"]; });
      var lanes = index.lanes.map(function (l) { return [l.name + " (" + l.nodes + " nodes)", L.p.lanes[l.name] || "n/a", R.p.lanes[l.name] || "n/a"]; });
      var n = crow.filter(function (r) { return r[1] !== r[2]; }).length;
      out.replaceChildren(
        table("Status", head, rows),
        table("Components and versions (" + n + " differ)", head, crow),
        table("Values the profiles own", head, orow.length ? orow : [["(none)", "", ""]]),
        table("Ladder: lane verdicts", head, lanes));
      status.textContent = "Rows that differ are marked.";
    }).catch(function (e) { status.textContent = "Cannot compare: " + e.message; });
  }
  status.textContent = "Loading recipes…";
  Promise.all([json("api/v1/recipes.json"), json("api/v1/profiles.json")]).then(function (x) {
    index = x[0];
    x[1].profiles.forEach(function (p) { profiles[p.name] = p; });
    var keys = [];
    index.recipes.forEach(function (r) { r.profiles.forEach(function (p) { keys.push(r.name + "@" + p.name); }); });
    ["a", "b"].forEach(function (k) {
      keys.forEach(function (key) { sel[k].append(el("option", { value: key }, key.replace("@", " × "))); });
      sel[k].addEventListener("change", draw);
    });
    var q = new URLSearchParams(location.search);
    sel.a.value = keys.indexOf(q.get("a")) >= 0 ? q.get("a") : keys[0];
    sel.b.value = keys.indexOf(q.get("b")) >= 0 ? q.get("b") : keys[Math.min(1, keys.length - 1)];
    draw();
  }).catch(function (e) { status.textContent = "Could not load the catalog: " + e.message; });
})();
