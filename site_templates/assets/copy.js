/* A copy button on every command block: each <pre><code> of the page content, and each
   code.aicr-cmd (one-line commands in text). Uses the Clipboard API; no other script. */
(function () {
  "use strict";
  function add(code) {
    if (code.dataset.copy === "1") return;
    code.dataset.copy = "1";
    var b = document.createElement("button");
    b.type = "button"; b.className = "aicr-copy"; b.textContent = "Copy";
    b.setAttribute("aria-label", "Copy the command to the clipboard");
    b.addEventListener("click", function () {
      var text = code.textContent.replace(/\n$/, "");
      var done = function (ok) {
        b.textContent = ok ? "Copied" : "Select and copy by hand";
        setTimeout(function () { b.textContent = "Copy"; }, 2000);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      } else done(false);
    });
    var pre = code.parentElement && code.parentElement.tagName === "PRE" ? code.parentElement : null;
    if (pre) { pre.classList.add("aicr-has-copy"); pre.insertBefore(b, pre.firstChild); }
    else code.insertAdjacentElement("afterend", b);
  }
  function run() {
    document.querySelectorAll(".md-content pre > code, .md-content code.aicr-cmd").forEach(add);
  }
  if (typeof document$ !== "undefined" && document$.subscribe) document$.subscribe(run);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
