// Drives the live widgets of a test page as a reader would: for every grid point it sets
// the controls' values and fires their input events, then records what the widget shows:
// its full-precision state, the printed values, the figure's marks and a hash of the
// figure. The JSON lands in <pre id="vg-live-report">, which --dump-dom returns.
(function () {
  function hash(s) {
    var h = 5381;
    for (var i = 0; i < s.length; i++) h = ((h * 33) ^ s.charCodeAt(i)) >>> 0;
    return h.toString(16) + ":" + s.length;
  }
  function set(root, name, value) {
    var input = root.querySelector('[name="' + name + '"]');
    input.value = String(value);
    input.dispatchEvent(new Event("input", {bubbles: true}));
  }
  function marks(svg) {
    var found = [];
    if (!svg) return found;
    svg.querySelectorAll("[class^='vg-']").forEach(function (m) {
      var mark = {cls: m.getAttribute("class")};
      ["data-v", "data-x", "data-y", "data-x0", "data-x1"].forEach(function (a) {
        if (m.hasAttribute(a)) mark[a.slice(5)] = Number(m.getAttribute(a));
      });
      ["y", "height", "cy", "y1"].forEach(function (a) {
        if (m.hasAttribute(a)) mark["px_" + a] = Number(m.getAttribute(a));
      });
      found.push(mark);
    });
    return found;
  }
  function snapshot(root) {
    var svg = root.querySelector(".vg-live-figure svg"), printed = {};
    root.querySelectorAll("td[data-key]").forEach(function (td) { printed[td.dataset.key] = td.textContent; });
    return {state: JSON.parse(root.getAttribute("data-state")), printed: printed,
            error: root.querySelector(".vg-live-error").textContent,
            figure: svg ? hash(svg.outerHTML) : null, marks: marks(svg)};
  }
  function run() {
    var grid = JSON.parse(document.getElementById("vg-grid").textContent), report = {};
    Object.keys(grid).forEach(function (kind) {
      var root = document.querySelector('div.vg-live[data-widget="' + kind + '"]');
      report[kind] = {initial: snapshot(root), points: grid[kind].map(function (point) {
        Object.keys(point).forEach(function (name) { set(root, name, point[name]); });
        return snapshot(root);
      })};
    });
    var pre = document.createElement("pre");
    pre.id = "vg-live-report";
    pre.textContent = JSON.stringify(report);
    document.body.appendChild(pre);
  }
  window.addEventListener("load", function () {
    try { run(); } catch (error) {
      var pre = document.createElement("pre");
      pre.id = "vg-live-report";
      pre.textContent = JSON.stringify({driver_error: String(error) + " " + error.stack});
      document.body.appendChild(pre);
    }
  });
})();
