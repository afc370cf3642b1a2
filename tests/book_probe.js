// Injected into a copy of each built page by tests/book_browser.py. Once MathJax has typeset
// and the widgets have had time to render, it measures what a reader at this window width
// sees and appends the result as JSON in <pre id="vg-probe">, which --dump-dom returns.
(function () {
  function inScrollBox(el, article) {
    for (var a = el; a && a !== article.parentElement; a = a.parentElement) {
      var overflow = getComputedStyle(a).overflowX;
      if (overflow === "auto" || overflow === "scroll") return true;
    }
    return false;
  }
  function loaded(img) { return img.complete && img.naturalWidth > 0 && img.naturalHeight > 0; }
  var VERDICT = /learns\?|verdict|minus GRPO/i;
  function snippet(el) { return el.textContent.replace(/\s+/g, " ").trim().slice(0, 70); }

  function measure() {
    var article = document.querySelector("article.bd-article");
    var report = {width: window.innerWidth, article: !!article, broken_images: [], clipped: [],
                  cramped: [], widgets: [], live: [], wide_math: [], math_errors: 0};
    if (!article) return report;
    var right = article.getBoundingClientRect().right;
    document.querySelectorAll("img").forEach(function (img) {
      if (!loaded(img) && getComputedStyle(img).display !== "none")
        report.broken_images.push((img.getAttribute("src") || "(no src)").slice(0, 60));
    });
    // A display equation or table wider than the column must sit in a box that scrolls.
    article.querySelectorAll('mjx-container[display="true"], div.math, table').forEach(function (el) {
      var wide = el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > right + 1;
      if (wide && !inScrollBox(el, article))
        report.clipped.push(el.tagName.toLowerCase() + ": " + snippet(el));
    });
    // A display equation should fit the column; a scroll box is the fallback, not the plan.
    article.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1) report.wide_math.push(snippet(el));
    });
    // Neighbouring cells need some room, or a label runs into its value ("stderr0.23").
    article.querySelectorAll("tr").forEach(function (row) {
      var cells = row.querySelectorAll("td, th");
      for (var i = 0; i + 1 < cells.length; i++) {
        var gap = cells[i + 1].getBoundingClientRect().left - cells[i].getBoundingClientRect().right;
        var style = getComputedStyle(cells[i]), next = getComputedStyle(cells[i + 1]);
        var room = gap + parseFloat(style.paddingRight) + parseFloat(next.paddingLeft);
        if (room < 4 && cells[i].offsetWidth > 0) { report.cramped.push(snippet(row)); break; }
      }
    });
    // A code cell wraps at the column's width: no line hides past the edge.
    report.code_overflow = [];
    article.querySelectorAll("div.cell_input pre").forEach(function (pre) {
      if (pre.scrollWidth > pre.clientWidth + 1) report.code_overflow.push(snippet(pre));
    });
    // A table's verdict (learns?, a paired interval against the baseline, a p-value) must be
    // on screen without scrolling the table's box sideways.
    report.hidden_verdicts = [];
    article.querySelectorAll("table").forEach(function (table) {
      var box = table.getBoundingClientRect();
      var visible = Math.min(box.left + table.clientWidth, right);
      table.querySelectorAll("th").forEach(function (th) {
        if (VERDICT.test(th.textContent) && th.getBoundingClientRect().right > visible + 1)
          report.hidden_verdicts.push(th.textContent.trim() + " | " + snippet(table));
      });
    });
    article.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').forEach(function (s) {
      var output = s.parentElement;
      var figures = Array.prototype.filter.call(output.querySelectorAll("img"), function (img) {
        return loaded(img) && img.offsetWidth > 0;
      });
      report.widgets.push({rendered: !!output.querySelector(".jupyter-widgets"), figures: figures.length});
    });
    // The live widgets (book/_live/vg-live.js): mounted, with a drawn figure and values.
    article.querySelectorAll("div.vg-live").forEach(function (div) {
      var svg = div.querySelector(".vg-live-figure svg");
      report.live.push({kind: div.getAttribute("data-widget"), stacked: div.getAttribute("data-stacked") === "1",
                        rendered: !!svg && svg.childElementCount > 0 && svg.getBoundingClientRect().width > 0 &&
                                  div.querySelectorAll("td[data-key]").length > 0});
    });
    report.math_errors = article.querySelectorAll("mjx-merror").length;
    // The text column itself never scrolls sideways (a wide table scrolls in its own box).
    report.column_overflow = article.scrollWidth > article.clientWidth + 1 ?
      article.scrollWidth - article.clientWidth : 0;
    // What sticks out, so a failure names its cause (the innermost elements past the edge).
    report.overflowing = [];
    if (report.column_overflow) {
      var edge = article.getBoundingClientRect().right;
      article.querySelectorAll("*").forEach(function (el) {
        if (el.getBoundingClientRect().right > edge + 1 && !inScrollBox(el, article) &&
            !Array.prototype.some.call(el.children, function (c) { return c.getBoundingClientRect().right > edge + 1; }))
          if (report.overflowing.length < 3) report.overflowing.push(el.tagName.toLowerCase() + ": " + snippet(el));
      });
    }
    // Each picture's file and the width it is shown at: Python reads the PNG's smallest text
    // and dpi and computes the text's size on screen.
    report.column = article.clientWidth;
    report.images = [];
    article.querySelectorAll("img").forEach(function (img) {
      if (loaded(img) && img.offsetWidth > 0)
        report.images.push({src: img.getAttribute("src"), natural: img.naturalWidth,
                            shown: img.getBoundingClientRect().width});
    });
    // A heading followed directly by the next heading: a section with nothing in it.
    report.empty_sections = [];
    article.querySelectorAll("section").forEach(function (section) {
      var children = Array.prototype.filter.call(section.children, function (c) {
        return !/^H[1-6]$/.test(c.tagName) && !c.classList.contains("headerlink") && c.tagName !== "SPAN";
      });
      if (!children.length || children[0].tagName === "SECTION") {
        var heading = section.querySelector("h1, h2, h3, h4, h5, h6");
        report.empty_sections.push(heading ? snippet(heading) : "(untitled)");
      }
    });
    return report;
  }

  function publish() {
    var pre = document.createElement("pre");
    pre.id = "vg-probe";
    try { pre.textContent = JSON.stringify(measure()); }
    catch (error) { pre.textContent = JSON.stringify({probe_error: String(error)}); }
    document.body.appendChild(pre);
    // Inside a narrow iframe (a phone-width check), hand the report to the host page.
    if (window.parent !== window) window.parent.postMessage(pre.textContent, "*");
  }
  window.addEventListener("load", function () {
    var typeset = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
    // Widgets render asynchronously through require.js; virtual time makes the wait cheap.
    typeset.then(function () { setTimeout(publish, 4000); }, publish);
  });
})();
