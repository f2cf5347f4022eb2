/* Side by side: two recipe × profile rows of the catalog (?a=<recipe>@<profile>&b=...): what
   changes from left to right (old → new, every component version and value), then status and
   summary, components and versions, the values the profile owns, and the ladder.
   Without b (a dashboard row's link) the right side is the nearest counterpart of a, and the page
   says which and why: the same recipe at its other scale profile; else the recipe that keeps
   service, accelerator and intent and differs in the fewest other criteria (OS before platform).
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
  function fmtN(n) { return Number(n).toLocaleString("en-US"); }
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
  var why = el("p", { id: "aicr-cmp-why", class: "aicr-cmp-why" });
  var status = el("p", { class: "aicr-count", role: "status", "aria-live": "polite" });
  var out = el("div", { id: "aicr-cmp-out" });
  root.append(form, why, status, out);
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
  // --- the nearest counterpart of a row -----------------------------------------------------------
  var KEEP = ["service", "accelerator", "intent"], WEIGHT = { os: 1, platform: 2 };
  function split(key) { var at = key.lastIndexOf("@"); return [key.slice(0, at), key.slice(at + 1)]; }
  function byName(name) { return index.recipes.filter(function (r) { return r.name === name; })[0]; }
  function counterpart(key) {
    var k = split(key), rec = byName(k[0]);
    if (!rec) return null;
    var others = rec.profiles.filter(function (p) { return p.name !== k[1]; });
    if (others.length) {
      return { key: rec.name + "@" + others[0].name, why: "the same recipe at its other scale profile, " + others[0].name +
        ": the criteria are equal, so every difference below comes from the profile" };
    }
    var best = null;
    index.recipes.forEach(function (r) {
      if (r.name === rec.name || KEEP.some(function (c) { return r.criteria[c] !== rec.criteria[c]; })) return;
      var diff = Object.keys(r.criteria).filter(function (c) { return r.criteria[c] !== rec.criteria[c]; });
      var cost = diff.reduce(function (n, c) { return n + (WEIGHT[c] || 10); }, 0);
      var prof = r.profiles.filter(function (p) { return p.name === k[1]; })[0] || r.profiles[0];
      if (!best || cost < best.cost || (cost === best.cost && r.name < best.r.name)) best = { r: r, p: prof, cost: cost, diff: diff };
    });
    if (!best) return null;
    return { key: best.r.name + "@" + best.p.name, why: "the recipe with the same service, accelerator and intent (" +
      KEEP.map(function (c) { return rec.criteria[c]; }).join(", ") + ") that differs least: only in " +
      best.diff.map(function (c) { return c + " (" + rec.criteria[c] + " → " + best.r.criteria[c] + ")"; }).join(" and ") +
      (best.p.name === k[1] ? ", at the same profile " + k[1] : ", at its profile " + best.p.name) };
  }
  // --- old → new: every component version and every value that differs ------------------------
  function flat(v, path, outMap) {
    if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
      Object.keys(v).sort().forEach(function (k) { flat(v[k], path ? path + "." + k : k, outMap); });
    } else outMap[path] = JSON.stringify(v);
    return outMap;
  }
  function changes(L, R) {
    var rows = [], comps = {};
    [["consensus", L.p.consensus, R.p.consensus], ["scale ceiling", L.p.ceiling || "none", R.p.ceiling || "none"],
      ["node band", L.p.band, R.p.band], ["health", L.rec.health, R.rec.health]].forEach(function (r) {
      if (r[1] !== r[2]) rows.push(r);
    });
    [L, R].forEach(function (s, i) {
      (s.p.recipe.spec.componentRefs || []).forEach(function (c) { comps[c.name] = comps[c.name] || [null, null]; comps[c.name][i] = c; });
    });
    Object.keys(comps).sort().forEach(function (n) {
      var a = comps[n][0], b = comps[n][1];
      if (!a || !b) { rows.push([n, a ? a.version || "(no version)" : "not deployed", b ? b.version || "(no version)" : "not deployed"]); return; }
      if (a.version !== b.version) rows.push([n + " version", a.version || "(no version)", b.version || "(no version)"]);
      var va = flat(a.values || {}, "", {}), vb = flat(b.values || {}, "", {});
      Object.keys(Object.assign({}, va, vb)).sort().forEach(function (k) {
        if (va[k] !== vb[k]) rows.push([n + " " + k, va[k] === undefined ? "not set" : va[k], vb[k] === undefined ? "not set" : vb[k]]);
      });
    });
    return rows;
  }
  function changeTable(rows) {
    var wrap = el("div", { class: "aicr-table-wrap", tabindex: "0", role: "region", "aria-label": "What changes from left to right" });
    var t = el("table", { class: "aicr-t", id: "aicr-cmp-changes" }), thead = el("thead"), tb = el("tbody"), tr = el("tr");
    t.append(el("caption", {}, rows.length + " change" + (rows.length === 1 ? "" : "s") + " from left to right (old → new)"), thead, tb);
    thead.append(tr);
    ["What changes", "Left (old) → right (new)"].forEach(function (h) { tr.append(el("th", { scope: "col" }, h)); });
    if (!rows.length) { var none = el("tr"); none.append(el("td", { colspan: "2" }, "Nothing: the two rows resolve to the same components and values.")); tb.append(none); }
    rows.forEach(function (r) {
      var row = el("tr"), td = el("td");
      td.append(el("span", { class: "aicr-old" }, r[1]), document.createTextNode(" → "), el("span", { class: "aicr-new" }, r[2]));
      row.append(el("th", { scope: "row" }, r[0]), td); tb.append(row);
    });
    wrap.append(t);
    return wrap;
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
          // the status word from the judged record (the row's ceiling), never the profile file's
          var judged = s.p.ceilingNodes ? "qualified up to " + fmtN(s.p.ceilingNodes) + " nodes" : "proposed: no lane passed yet";
          if (s.p.summary && s.p.summary.sample) judged += ", SAMPLE evidence";
          owned[k] = owned[k] || ["", ""]; owned[k][i] = JSON.stringify(v.value) + " (" + judged + ")";
        });
      });
      var orow = Object.keys(owned).sort().map(function (k) { return [k, owned[k][0] || "not owned", owned[k][1] || "not owned"]; });
      var lanes = index.lanes.map(function (l) { return [l.name + " (" + l.nodes + " nodes)", L.p.lanes[l.name] || "n/a", R.p.lanes[l.name] || "n/a"]; });
      var n = crow.filter(function (r) { return r[1] !== r[2]; }).length;
      out.replaceChildren(
        changeTable(changes(L, R)),
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
    // no row asked for: the first row that has a counterpart, never a row against itself
    var asked = keys.indexOf(q.get("a")) >= 0;
    sel.a.value = asked ? q.get("a") : (keys.filter(function (k) { return counterpart(k); })[0] || keys[0]);
    var left = asked ? "" : "Left side: " + sel.a.value.replace("@", " × ") + ", the first row with a counterpart (the link named none). ";
    var near = counterpart(sel.a.value);
    if (keys.indexOf(q.get("b")) >= 0) {
      sel.b.value = q.get("b");
      why.textContent = left + "Right side: " + sel.b.value.replace("@", " × ") + ", as the link asked.";
    } else if (near) {
      sel.b.value = near.key;
      why.textContent = left + "Right side: " + near.key.replace("@", " × ") + ", chosen as the nearest counterpart of the left: " + near.why + ".";
    } else {
      sel.b.value = sel.a.value;
      why.textContent = "No other recipe shares service, accelerator and intent with " + sel.a.value.replace("@", " × ") +
        ", and it has one profile: pick the right side yourself.";
    }
    ["a", "b"].forEach(function (k) {
      sel[k].addEventListener("change", function () {
        why.textContent = "Both sides are as you chose them.";
      });
    });
    draw();
  }).catch(function (e) { status.textContent = "Could not load the catalog: " + e.message; });
})();
