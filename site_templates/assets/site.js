/* Site-wide, loaded just before the theme's script (overrides/main.html):
   1. The search index (a few hundred KB) is requested on the first use of the search box, not on
      every page load: the theme's request for search/search_index.json is held until the search
      box gets focus or is clicked, or the address asks for a search (?q=). Opened from disk
      (file://) the theme loads search_index.js instead, which this leaves alone.
   2. Every scroll container that overflows (code blocks, wide tables) takes keyboard focus, so
      the arrow keys scroll it; a table's container gets role=region and a name. */
(function () {
  "use strict";
  var INDEX = /\/search\/search_index\.json$/;
  var proto = XMLHttpRequest.prototype, open = proto.open, send = proto.send;
  var held = [], wanted = false, deferred = new WeakSet();
  proto.open = function (method, url) {
    if (INDEX.test(String(url).split(/[?#]/)[0])) deferred.add(this);
    return open.apply(this, arguments);
  };
  proto.send = function () {
    if (!wanted && deferred.has(this)) { held.push([this, arguments]); return; }
    return send.apply(this, arguments);
  };
  function want() {
    if (wanted) return;
    wanted = true;
    held.splice(0).forEach(function (h) { send.apply(h[0], h[1]); });
  }
  document.addEventListener("focusin", function (e) {
    if (e.target instanceof Element && e.target.matches(".md-search__input")) want();
  }, true);
  document.addEventListener("click", function (e) {
    if (e.target instanceof Element && e.target.closest('label[for="__search"], .md-search')) want();
  }, true);
  if (new URLSearchParams(location.search).has("q")) want();

  function name(box) {
    var cap = box.querySelector("caption"), th = box.querySelectorAll("thead th");
    if (cap) return cap.textContent.trim();
    return "Table: " + Array.prototype.map.call(th, function (t) { return t.textContent.trim(); }).join(", ");
  }
  function scrollers() {
    document.querySelectorAll(".md-typeset pre > code, .md-typeset__scrollwrap, .aicr-table-wrap").forEach(function (box) {
      if (box.scrollWidth <= box.clientWidth + 1 || box.hasAttribute("tabindex")) return;
      box.setAttribute("tabindex", "0");
      if (box.tagName !== "CODE" && !box.hasAttribute("role")) {
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", name(box));
      }
    });
  }
  window.addEventListener("load", scrollers);
  window.addEventListener("resize", function () { clearTimeout(scrollers.t); scrollers.t = setTimeout(scrollers, 200); });
})();
