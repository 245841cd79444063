// diffpal report.html: renders the findings from the JSON data island.
// Every string from the repository reaches the page through textContent,
// a text node or setAttribute on a fixed attribute name; nothing is ever
// parsed as HTML. The list is rendered in batches of BATCH (more on
// scroll or "Show more"), and filtering runs over the in-memory array.
(function () {
  "use strict";
  var BATCH = 200;
  var perf = window.performance;
  var doc = document;
  var stats = { ready: false, firstBatchMs: 0, lastFilterMs: 0, matching: 0, rendered: 0, total: 0 };
  window.diffpal = stats;

  var data;
  try {
    data = JSON.parse(doc.getElementById("data").textContent);
  } catch (e) {
    doc.getElementById("count").textContent = "The findings could not be read.";
    return;
  }
  var all = data.findings || [];
  stats.total = all.length;

  var $ = function (id) { return doc.getElementById(id); };
  var form = $("filters"), list = $("list"), count = $("count");
  var moreWrap = $("more-wrap"), more = $("more");
  var q = $("f-q"), fCat = $("f-cat"), fProf = $("f-prof"), fFile = $("f-file");
  var fBase = $("f-base"), fBlk = $("f-blk"), fSev = $("f-sev");

  function el(tag, cls, text) {
    var n = doc.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }

  // Filter options, from the data.
  function tally(key) {
    var m = new Map();
    for (var i = 0; i < all.length; i++) {
      var v = all[i][key] || "";
      m.set(v, (m.get(v) || 0) + 1);
    }
    return m;
  }
  function fill(select, m, emptyLabel) {
    var keys = Array.from(m.keys()).sort();
    for (var i = 0; i < keys.length; i++) {
      var k = keys[i];
      select.appendChild(new Option((k === "" ? emptyLabel : k) + " (" + m.get(k) + ")", k));
    }
    return keys.length;
  }
  var sevCounts = tally("sev");
  var sevs = (data.severities || []).slice();
  sevCounts.forEach(function (_, k) { if (sevs.indexOf(k) < 0) sevs.push(k); });
  var sevBoxes = [];
  sevs.forEach(function (s, i) {
    var n = sevCounts.get(s) || 0;
    var label = el("label");
    var box = el("input");
    box.type = "checkbox";
    box.checked = box.defaultChecked = true;
    box.id = "f-sev-" + i;
    box.value = s;
    box.disabled = n === 0;
    label.appendChild(box);
    label.appendChild(doc.createTextNode(" "));
    label.appendChild(el("span", "badge sev-" + s, s));
    label.appendChild(doc.createTextNode(" " + n));
    fSev.appendChild(label);
    sevBoxes.push(box);
  });
  fill(fCat, tally("cat"), "(none)");
  if (fill(fProf, tally("prof"), "(unknown)") < 2) fProf.parentNode.hidden = true;
  fill(fFile, tally("path"), "(none)");
  if (data.baseline) $("f-base-field").hidden = false;
  form.hidden = false;
  $("keys").hidden = false;

  // Search text, built on the first search.
  var hay = null;
  function haystack() {
    if (hay) return hay;
    hay = new Array(all.length);
    for (var i = 0; i < all.length; i++) {
      var f = all[i];
      hay[i] = [f.title, f.path, f.rule, f.cat, f.id, f.prof, f.msg, f.ev, f.imp, f.sug, f.sev]
        .join("\n").toLowerCase();
    }
    return hay;
  }

  var matching = [];
  var shown = 0;

  function apply() {
    var t0 = perf.now();
    var on = new Set();
    sevBoxes.forEach(function (b) { if (b.checked) on.add(b.value); });
    var cat = fCat.value, prof = fProf.value, file = fFile.value, base = fBase.value;
    var blk = fBlk.checked;
    var terms = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    var h = terms.length ? haystack() : null;
    var out = [];
    outer: for (var i = 0; i < all.length; i++) {
      var f = all[i];
      if (!on.has(f.sev)) continue;
      if (cat && f.cat !== cat) continue;
      if (prof && (f.prof || "") !== prof) continue;
      if (file && f.path !== file) continue;
      if (base && f.base !== base) continue;
      if (blk && !f.blk) continue;
      for (var j = 0; j < terms.length; j++) {
        if (h[i].indexOf(terms[j]) < 0) continue outer;
      }
      out.push(i);
    }
    matching = out;
    list.replaceChildren();
    shown = 0;
    renderMore();
    stats.lastFilterMs = perf.now() - t0;
    if (perf.mark) perf.mark("diffpal-filter");
  }

  function updateCount() {
    var n = matching.length;
    var s = n === all.length
      ? n + " finding" + (n === 1 ? "" : "s")
      : n + " of " + all.length + " findings match";
    if (shown < n) s += " (showing " + shown + ")";
    count.textContent = s;
    count.setAttribute("data-matching", String(n));
    count.setAttribute("data-shown", String(shown));
    stats.matching = n;
    stats.rendered = shown;
    moreWrap.hidden = shown >= n;
    if (shown < n) more.textContent = "Show " + Math.min(BATCH, n - shown) + " more (" + (n - shown) + " left)";
  }

  function renderMore(limit) {
    var end = Math.min(matching.length, shown + (limit || BATCH));
    var frag = doc.createDocumentFragment();
    for (; shown < end; shown++) frag.appendChild(render(matching[shown]));
    list.appendChild(frag);
    updateCount();
  }

  function meta(dl, name, value, code) {
    if (value === undefined || value === null || value === "") return;
    var d = el("div");
    d.appendChild(el("dt", "", name));
    var dd = el("dd");
    if (code) dd.appendChild(el("code", "", value)); else dd.textContent = String(value);
    d.appendChild(dd);
    dl.appendChild(d);
  }

  function isHTTP(u) { return /^https?:\/\/[^\s]+$/i.test(u || ""); }

  function render(i) {
    var f = all[i];
    var a = el("article", "finding sev-" + f.sev);
    a.tabIndex = 0;
    a.id = "finding-" + i;
    a.setAttribute("aria-labelledby", "finding-" + i + "-t");
    var h = el("h3");
    h.id = "finding-" + i + "-t";
    h.appendChild(el("span", "badge sev-" + f.sev, f.sev));
    if (f.blk) h.appendChild(el("span", "blocking", "blocking"));
    h.appendChild(el("span", "title", f.title));
    a.appendChild(h);

    var where = el("p", "where");
    var loc = f.path + ":" + f.sl + (f.el > f.sl ? "-" + f.el : "");
    where.appendChild(el("code", "", loc));
    if (f.side === "LEFT") where.appendChild(doc.createTextNode(" (removed lines)"));
    if (f.link && isHTTP(f.link)) {
      where.appendChild(doc.createTextNode(" · "));
      var l = el("a", "", "view on the code host");
      l.setAttribute("href", f.link);
      l.setAttribute("rel", "noopener noreferrer");
      l.setAttribute("target", "_blank");
      where.appendChild(l);
    }
    a.appendChild(where);

    var m = el("dl", "meta");
    meta(m, "Category", f.cat);
    meta(m, "Rule", f.rule, true);
    meta(m, "Confidence", Math.round((f.conf || 0) * 100) + "%");
    meta(m, "Profile", f.prof);
    if (f.base) meta(m, "Baseline", f.base);
    meta(m, "Stable id", f.id, true);
    a.appendChild(m);

    if (f.snip && f.snip.l && f.snip.l.length) {
      var pre = el("pre", "snip");
      pre.setAttribute("aria-label", "Code at " + loc);
      var code = el("code");
      for (var k = 0; k < f.snip.l.length; k++) {
        var n = f.snip.s + k;
        var marked = n >= f.snip.ms && n <= f.snip.me;
        var ln = el("span", marked ? "l m" : "l", f.snip.l[k]);
        ln.setAttribute("data-n", String(n));
        code.appendChild(ln);
      }
      pre.appendChild(code);
      a.appendChild(pre);
    }

    var body = el("dl", "body");
    [["Message", f.msg], ["Evidence", f.ev], ["Impact", f.imp], ["Suggestion", f.sug]].forEach(function (p) {
      if (!p[1]) return;
      body.appendChild(el("dt", "", p[0]));
      body.appendChild(el("dd", "", p[1]));
    });
    if (body.firstChild) a.appendChild(body);
    return a;
  }

  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  form.addEventListener("reset", function () { setTimeout(apply, 0); });
  more.addEventListener("click", function () { renderMore(); });
  if ("IntersectionObserver" in window) {
    new IntersectionObserver(function (es) {
      if (es.some(function (e) { return e.isIntersecting; }) && shown < matching.length) renderMore();
    }, { rootMargin: "600px" }).observe(moreWrap);
  }

  // Keys: "/" search, j / k next / previous finding, Esc leaves the search.
  doc.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target, tag = t && t.tagName;
    var typing = tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA";
    if (typing) {
      if (e.key === "Escape" && t === q) { q.blur(); }
      return;
    }
    if (e.key === "/") {
      e.preventDefault();
      q.focus();
      q.select();
      return;
    }
    if (e.key !== "j" && e.key !== "k") return;
    var cur = t && t.closest ? t.closest(".finding") : null;
    var next;
    if (!cur) next = list.firstElementChild;
    else if (e.key === "j") {
      next = cur.nextElementSibling;
      if (!next && shown < matching.length) { renderMore(); next = cur.nextElementSibling; }
    } else next = cur.previousElementSibling;
    if (next) {
      e.preventDefault();
      next.focus();
      if (next.scrollIntoView) next.scrollIntoView({ block: "nearest" });
    }
  });

  // Print everything that matches, with every details open.
  window.addEventListener("beforeprint", function () {
    if (shown < matching.length) renderMore(matching.length - shown);
    doc.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });

  var t0 = perf.now();
  apply();
  stats.firstBatchMs = perf.now() - t0;
  if (perf.mark) perf.mark("diffpal-first-batch");
  stats.ready = true;
})();
