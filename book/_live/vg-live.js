// The book's live widgets: computed in the reader's browser from the static HTML, with no
// kernel, no server and no network. A chapter places <div class="vg-live" data-widget="...">
// and loads this file; each div becomes controls, an SVG figure and a table of values.
// Every computation mirrors the package (verifiable_grpo.training.losses and
// verifiable_grpo.book.live_widgets); tests/book/test_live_widgets.py checks them in headless
// Chromium over a grid of inputs. Hand-written, no library: the book stays offline.
(function () {
  "use strict";
  if (window.VGLive) return; // loaded twice on one page: mount once
  var SVGNS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ computations
  function parseNumbers(text, what) {
    var parts = String(text).replace(/,/g, " ").split(/\s+/).filter(function (s) { return s; });
    if (!parts.length) throw new Error(what + " is empty");
    var numbers = parts.map(Number);
    if (!numbers.every(isFinite)) throw new Error(what + " must be finite numbers, got " + text);
    return numbers;
  }

  // losses.group_advantages: A = (r - mean) / (std + epsilon); std with `correction`.
  function groupAdvantages(rewards, correction, epsilon) {
    var n = rewards.length;
    if (correction !== 0 && correction !== 1) throw new Error("correction must be 0 or 1");
    if (correction === 1 && n < 2)
      throw new Error("the sample std (correction=1) needs a group of at least 2 responses");
    if (!(epsilon > 0)) throw new Error("epsilon must be positive");
    var sum = 0;
    rewards.forEach(function (r) { sum += r; });
    var constant = rewards.every(function (r) { return r === rewards[0]; });
    var mean = constant ? rewards[0] : sum / n; // a constant group: exactly 0 advantages
    var centred = rewards.map(function (r) { return r - mean; });
    var squares = 0;
    centred.forEach(function (c) { squares += c * c; });
    var std = Math.sqrt(squares / (n - correction));
    return {rewards: rewards, mean: mean, std: std, zero_variance: constant,
            advantages: centred.map(function (c) { return c / (std + epsilon); })};
  }

  // numpy.linspace's arithmetic (i * step + start, the last point set to stop), so that the
  // plotted ratios are the same doubles as widgets.clipping_curves uses.
  function linspace(start, stop, num) {
    var step = (stop - start) / (num - 1), out = [];
    for (var i = 0; i < num; i++) out.push(i * step + start);
    out[num - 1] = stop;
    return out;
  }

  // The clip's six regions: live_widgets.CLIP_REGIONS (the same texts).
  var REGIONS = {
    "A > 0|below": [true, "a good token became less likely: pulled back up, unclipped"],
    "A > 0|inside": [true, "inside the interval: the plain policy gradient"],
    "A > 0|above": [false, "a good token is already more likely: clipped, no push"],
    "A < 0|below": [false, "a bad token is already less likely: clipped, no push"],
    "A < 0|inside": [true, "inside the interval: the plain policy gradient"],
    "A < 0|above": [true, "a bad token became more likely: pushed back down, unclipped"]
  };
  var ZERO_ADVANTAGE = "A = 0: the token carries no gradient wherever the ratio lies";

  // One token's min(rho A, clip(rho, 1 - eps, 1 + eps_high) A) and its slope in rho.
  function clipPoint(rho, A, low, high) {
    var unclipped = rho * A, clipped = Math.min(Math.max(rho, low), high) * A;
    var cut = clipped < unclipped;
    return {objective: Math.min(unclipped, clipped), unclipped: unclipped,
            gradient: cut ? 0 : A, clipped: cut};
  }

  function clipView(A, eps, epsHigh, rho) {
    if (!(eps > 0 && eps < 1)) throw new Error("clip_epsilon must lie in (0, 1)");
    if (!(epsHigh > 0)) throw new Error("clip_epsilon_high must be positive");
    var low = 1.0 - eps, high = 1.0 + epsHigh, ratios = linspace(0.5, 1.5, 201);
    var points = ratios.map(function (r) { return clipPoint(r, A, low, high); });
    var where = rho < low ? "below" : rho > high ? "above" : "inside";
    var region = A === 0 ? [false, ZERO_ADVANTAGE] : REGIONS[(A > 0 ? "A > 0" : "A < 0") + "|" + where];
    var cut = points.filter(function (p) { return p.clipped; }).length;
    return {A: A, interval: [low, high], ratios: ratios, points: points, rho: rho,
            at: clipPoint(rho, A, low, high), region: region[1], kept: region[0],
            share_clipped: cut / ratios.length};
  }

  // live_widgets.kl_estimator_values: exact KL(p || q) and k1, k2, k3 for each token of p.
  function klView(pWeights, qWeights) {
    if (pWeights.length !== qWeights.length)
      throw new Error("p has " + pWeights.length + " entries but q has " + qWeights.length);
    function normalise(w, what) {
      var s = 0;
      w.forEach(function (v) {
        if (v < 0) throw new Error(what + " has negative probabilities");
        s += v;
      });
      if (!(s > 0)) throw new Error(what + " sums to zero");
      return w.map(function (v) { return v / s; });
    }
    var p = normalise(pWeights, "p"), q = normalise(qWeights, "q");
    var view = {p: p, q: q, exact: 0, per_token: {k1: [], k2: [], k3: []}};
    p.forEach(function (pv, i) {
      if (pv > 0 && q[i] === 0) throw new Error("q is 0 where p is not: KL(p || q) is infinite");
      if (pv === 0) { ["k1", "k2", "k3"].forEach(function (k) { view.per_token[k].push(null); }); return; }
      var logR = Math.log(q[i]) - Math.log(pv);
      view.exact += pv * -logR;
      view.per_token.k1.push(-logR);
      view.per_token.k2.push(logR * logR / 2);
      view.per_token.k3.push(Math.expm1(logR) - logR);
    });
    ["k1", "k2", "k3"].forEach(function (k) {
      var mean = 0, spread = 0;
      p.forEach(function (pv, i) { if (pv > 0) mean += pv * view.per_token[k][i]; });
      p.forEach(function (pv, i) { if (pv > 0) spread += pv * Math.pow(view.per_token[k][i] - mean, 2); });
      view[k + "_mean"] = mean;
      view[k + "_std"] = Math.sqrt(spread);
    });
    return view;
  }

  // A group of G independent answers, each right with probability p (chapter 9's exercise).
  function signalView(p, G) {
    if (!(p >= 0 && p <= 1)) throw new Error("p must lie in [0, 1]");
    if (!(Number.isInteger(G) && G >= 1)) throw new Error("G must be a positive integer");
    var right = Math.pow(p, G), wrong = Math.pow(1 - p, G), mixed = 1 - right - wrong;
    return {p: p, G: G, all_right: right, all_wrong: wrong, constant: right + wrong,
            mixed: mixed, informative_per_100_responses: 100 * mixed / G};
  }

  // ------------------------------------------------------------------ drawing (SVG)
  function svgEl(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, attrs) {
    var t = svgEl("text", Object.assign({x: x, y: y, "font-size": 12}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  function niceTicks(lo, hi) {
    var raw = (hi - lo) / 4, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var ticks = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
      ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return ticks;
  }
  function fmtTick(v) { return String(Number(v.toPrecision(4))); }

  // One panel: a frame at box = [x, y, w, h] with value -> pixel maps and ticked axes.
  // Every figure is two panels side by side in a 760-wide frame. On a narrow screen
  // (STACK_BELOW) the right-hand panel moves under the left one, so neither shrinks to an
  // unreadable half of a phone's width.
  var STACK_BELOW = 600, HALF = 380;
  function panel(svg, box, xr, yr, title, xlabel) {
    var g = svgEl("g", {}, svg), x0 = box[0], y0 = box[1], w = box[2], h = box[3];
    if (svg.vgStacked && x0 >= HALF)
      g.setAttribute("transform", "translate(" + -HALF + "," + svg.vgStacked + ")");
    var px = function (v) { return x0 + (v - xr[0]) / (xr[1] - xr[0]) * w; };
    var py = function (v) { return y0 + h - (v - yr[0]) / (yr[1] - yr[0]) * h; };
    svgEl("rect", {x: x0, y: y0, width: w, height: h, fill: "none", stroke: "#888"}, g);
    var xticks = Array.isArray(xr.ticks) ? xr.ticks : xr.ticks === false ? [] : niceTicks(xr[0], xr[1]);
    xticks.forEach(function (v) {
      text(g, px(v), y0 + h + 14, fmtTick(v), {"text-anchor": "middle", "font-size": 10});
    });
    niceTicks(yr[0], yr[1]).forEach(function (v) {
      text(g, x0 - 4, py(v) + 3, fmtTick(v), {"text-anchor": "end", "font-size": 10});
      svgEl("line", {x1: x0, x2: x0 + w, y1: py(v), y2: py(v), stroke: "#eee"}, g);
    });
    text(g, x0 + w / 2, y0 - 6, title, {"text-anchor": "middle", "font-weight": "bold"});
    if (xlabel) text(g, x0 + w / 2, y0 + h + 30, xlabel, {"text-anchor": "middle", "font-size": 11});
    return {g: g, x: px, y: py};
  }
  function bars(p, centres, values, width, colours, attrs) {
    values.forEach(function (v, i) {
      if (v === null) return;
      var top = Math.min(p.y(v), p.y(0)), height = Math.abs(p.y(v) - p.y(0));
      svgEl("rect", Object.assign({x: p.x(centres[i]) - width / 2, y: top, width: width,
        height: Math.max(height, 0.5), fill: colours[i], "data-v": v}, attrs || {}), p.g);
    });
  }
  function polyline(p, xs, ys, attrs) {
    var pts = xs.map(function (x, i) { return p.x(x).toFixed(2) + "," + p.y(ys[i]).toFixed(2); });
    return svgEl("polyline", Object.assign({points: pts.join(" "), fill: "none"}, attrs), p.g);
  }
  function hline(p, xr, v, attrs) {
    return svgEl("line", Object.assign({x1: p.x(xr[0]), x2: p.x(xr[1]), y1: p.y(v), y2: p.y(v)}, attrs), p.g);
  }
  function range(values, lo, hi, pad) {
    var min = Math.min.apply(null, values.concat([lo])), max = Math.max.apply(null, values.concat([hi]));
    var extra = (max - min) * pad || 1;
    return [min - extra, max + extra];
  }
  function newFigure(root, height) {
    var figure = root.querySelector(".vg-live-figure");
    figure.innerHTML = "";
    var stacked = root.getBoundingClientRect().width < STACK_BELOW;
    root.setAttribute("data-stacked", stacked ? "1" : "0");
    // Stacked: room for a legend's second line between the two panels.
    var box = stacked ? "0 0 " + HALF + " " + (2 * height + LEGEND_WRAP) : "0 0 760 " + height;
    var svg = svgEl("svg", {viewBox: box, role: "img", width: "100%"}, figure);
    svg.vgStacked = stacked ? height + LEGEND_WRAP : 0;
    return svg;
  }
  // A legend in one row under a panel's axis label (it never covers the data).
  // Stacked, a legend wraps at its panel's edge instead of running into the other half.
  function legend(p, x, y, items) {
    var stacked = p.g.ownerSVGElement && p.g.ownerSVGElement.vgStacked;
    var start = x, edge = (x < HALF ? HALF : 2 * HALF) - 6;
    items.forEach(function (item) {
      var width = 24 + 5.6 * item[1].length;
      if (stacked && x > start && x + width - 10 > edge) { x = start; y += LEGEND_WRAP; }
      svgEl("rect", {x: x, y: y - 8, width: 10, height: 8, fill: item[0]}, p.g);
      text(p.g, x + 14, y, item[1], {"font-size": 10});
      x += width;
    });
  }
  var LEGEND_WRAP = 14;
  var LEGEND_Y = 256;
  function categories(n) {
    var xr = [-0.6, n - 0.4];
    xr.ticks = n <= 12 ? Array.from({length: n}, function (_, i) { return i; }) : niceTicks(0, n - 1);
    return xr;
  }

  // ------------------------------------------------------------------ widgets
  function fmt(v) { return v === null ? "-" : String(Number(v.toPrecision(6))); }

  function showValues(root, rows, state) {
    var table = root.querySelector(".vg-live-values");
    table.innerHTML = "";
    rows.forEach(function (row) {
      var tr = document.createElement("tr"), th = document.createElement("td"), td = document.createElement("td");
      th.textContent = row[0];
      td.textContent = row[2];
      td.setAttribute("data-key", row[1]);
      tr.appendChild(th);
      tr.appendChild(td);
      table.appendChild(tr);
    });
    root.querySelector(".vg-live-error").textContent = "";
    root.setAttribute("data-state", JSON.stringify(state));
  }
  function showError(root, error) {
    root.querySelector(".vg-live-error").textContent = error.message;
    root.querySelector(".vg-live-values").innerHTML = "";
    root.querySelector(".vg-live-figure").innerHTML = "";
    root.setAttribute("data-state", JSON.stringify({error: error.message}));
  }

  var COLOURS = {blue: "#1f77b4", green: "#2ca02c", red: "#d62728", grey: "#999", orange: "#ff7f0e",
                 purple: "#9467bd", shade: "rgba(255,127,14,0.22)"};

  function drawAdvantages(root, view) {
    var svg = newFigure(root, 266), n = view.rewards.length, xs = view.rewards.map(function (_, i) { return i; });
    var xr = categories(n);
    var width = Math.min(40, 300 / n);
    var left = panel(svg, [50, 24, 300, 180], xr, range(view.rewards, 0, 1, 0.1), "rewards of one group", "response");
    svgEl("rect", {x: left.x(xr[0]), width: left.x(xr[1]) - left.x(xr[0]), y: left.y(view.mean + view.std),
      height: Math.max(left.y(view.mean - view.std) - left.y(view.mean + view.std), 0), fill: "rgba(0,0,0,0.1)"}, left.g);
    bars(left, xs, view.rewards, width, xs.map(function () { return COLOURS.blue; }), {"class": "vg-reward"});
    hline(left, xr, view.mean, {stroke: "black", "class": "vg-mean", "data-v": view.mean});
    legend(left, 60, LEGEND_Y, [["#000", "mean " + fmt(view.mean)], ["rgba(0,0,0,0.25)", "mean \u00b1 std " + fmt(view.std)]]);
    var a = view.advantages;
    var right = panel(svg, [430, 24, 300, 180], xr, range(a, -1, 1, 0.1),
      view.zero_variance ? "advantages: all exactly 0" : "advantages", "response");
    hline(right, xr, 0, {stroke: "black"});
    bars(right, xs, a, width, a.map(function (v) { return v > 0 ? COLOURS.green : v < 0 ? COLOURS.red : COLOURS.grey; }),
      {"class": "vg-advantage"});
  }

  function renderAdvantages(root, c) {
    try {
      var rewards = parseNumbers(c.rewards.value, "rewards");
      var correction = Number(c.correction.value), epsilon = Number(c.epsilon.value);
      var view = groupAdvantages(rewards, correction, epsilon);
      drawAdvantages(root, view);
      showValues(root, [["mean", "mean", fmt(view.mean)], ["std", "std", fmt(view.std)],
        ["advantages", "advantages", view.advantages.map(fmt).join(", ")],
        ["zero variance", "zero_variance", view.zero_variance ? "yes: no signal" : "no"]],
        Object.assign({correction: correction, epsilon: epsilon}, view));
    } catch (error) { showError(root, error); }
  }

  function drawClip(root, view) {
    var svg = newFigure(root, 266), xr = [0.5, 1.5], A = view.A, rs = view.ratios;
    var obj = view.points.map(function (p) { return p.objective; });
    var unc = view.points.map(function (p) { return p.unclipped; });
    var grad = view.points.map(function (p) { return p.gradient; });
    var left = panel(svg, [50, 24, 300, 180], xr, range(unc.concat(obj), 0, 0, 0.08), "objective, A = " + fmt(A), "ratio \u03c1 = \u03c0 / \u03c0_old");
    var right = panel(svg, [430, 24, 300, 180], xr, range(grad, 0, 0, 0.15), "d objective / d\u03c1", "ratio \u03c1 = \u03c0 / \u03c0_old");
    [left, right].forEach(function (p) {
      var start = null; // shade each run of clipped ratios, as widgets.plot_clipping does
      view.points.forEach(function (pt, i) {
        if (pt.clipped && start === null) start = i;
        if (start !== null && (!pt.clipped || i === rs.length - 1)) {
          var stop = pt.clipped ? i : i - 1;
          svgEl("rect", {x: p.x(rs[start]), width: Math.max(p.x(rs[stop]) - p.x(rs[start]), 1), y: 24,
            height: 180, fill: COLOURS.shade, "class": "vg-clipped", "data-x0": rs[start], "data-x1": rs[stop]}, p.g);
          start = null;
        }
      });
      view.interval.forEach(function (b) {
        svgEl("line", {x1: p.x(b), x2: p.x(b), y1: 24, y2: 204, stroke: "#000", "stroke-dasharray": "2,3"}, p.g);
      });
    });
    polyline(left, rs, unc, {stroke: COLOURS.grey, "stroke-dasharray": "5,4"});
    polyline(left, rs, obj, {stroke: COLOURS.blue, "stroke-width": 2, "class": "vg-objective"});
    polyline(right, rs, grad, {stroke: COLOURS.purple, "stroke-width": 2, "class": "vg-gradient"});
    svgEl("circle", {cx: left.x(view.rho), cy: left.y(view.at.objective), r: 5, fill: COLOURS.red,
      "class": "vg-probe", "data-x": view.rho, "data-y": view.at.objective}, left.g);
    svgEl("circle", {cx: right.x(view.rho), cy: right.y(view.at.gradient), r: 5, fill: COLOURS.red}, right.g);
    legend(left, 60, LEGEND_Y, [[COLOURS.blue, "min(\u03c1A, clip(\u03c1)A)"], [COLOURS.grey, "\u03c1A unclipped"],
      [COLOURS.shade, "clipped: no gradient"], [COLOURS.red, "the token at \u03c1"]]);
  }

  function renderClip(root, c) {
    try {
      var A = Number(c.advantage.value), eps = Number(c.epsilon.value), high = Number(c.epsilon_high.value);
      var rho = Number(c.ratio.value), view = clipView(A, eps, high, rho);
      drawClip(root, view);
      showValues(root, [["interval", "interval", "[" + fmt(view.interval[0]) + ", " + fmt(view.interval[1]) + "]"],
        ["share of plotted ratios without gradient", "share_clipped", fmt(view.share_clipped)],
        ["objective at \u03c1 = " + fmt(rho), "objective", fmt(view.at.objective)],
        ["d objective / d\u03c1 there", "gradient", fmt(view.at.gradient)],
        ["region", "region", view.region]],
        {A: A, epsilon: eps, epsilon_high: high, rho: rho, interval: view.interval,
         objective: view.points.map(function (p) { return p.objective; }),
         gradient: view.points.map(function (p) { return p.gradient; }),
         clipped: view.points.map(function (p) { return p.clipped; }),
         at: view.at, region: view.region, kept: view.kept, share_clipped: view.share_clipped});
    } catch (error) { showError(root, error); }
  }

  function drawKL(root, view, token) {
    var svg = newFigure(root, 266), n = view.p.length, xs = view.p.map(function (_, i) { return i; });
    var xr = categories(n), w = Math.min(16, 120 / n);
    var left = panel(svg, [50, 24, 300, 180], xr, [0, Math.max.apply(null, view.p.concat(view.q)) * 1.15], "distributions", "token");
    bars(left, xs.map(function (x) { return x - 0.2; }), view.p, w, xs.map(function () { return COLOURS.blue; }));
    bars(left, xs.map(function (x) { return x + 0.2; }), view.q, w, xs.map(function () { return COLOURS.orange; }));
    legend(left, 60, LEGEND_Y, [[COLOURS.blue, "p (sampled)"], [COLOURS.orange, "q (reference)"]]);
    var all = [].concat(view.per_token.k1, view.per_token.k2, view.per_token.k3).filter(function (v) { return v !== null; });
    var right = panel(svg, [430, 24, 300, 180], xr, range(all.concat([view.exact]), 0, 0, 0.1),
      "each estimator if this token is drawn", "token");
    svgEl("rect", {x: right.x(token - 0.5), width: right.x(1) - right.x(0), y: 24, height: 180, fill: "rgba(214,39,40,0.1)", "class": "vg-token"}, right.g);
    hline(right, xr, 0, {stroke: "#000"});
    [["k1", -0.25, COLOURS.blue], ["k2", 0, COLOURS.green], ["k3", 0.25, COLOURS.purple]].forEach(function (k) {
      bars(right, xs.map(function (x) { return x + k[1]; }), view.per_token[k[0]], w * 0.9,
        xs.map(function () { return k[2]; }), {"class": "vg-" + k[0]});
    });
    hline(right, xr, view.exact, {stroke: COLOURS.red, "stroke-dasharray": "5,4", "class": "vg-exact", "data-v": view.exact});
    legend(right, 440, LEGEND_Y, [[COLOURS.blue, "k1"], [COLOURS.green, "k2"], [COLOURS.purple, "k3"], [COLOURS.red, "exact KL"],
      ["rgba(214,39,40,0.25)", "the token drawn"]]);
  }

  function renderKL(root, c) {
    try {
      var view = klView(parseNumbers(c.p.value, "p"), parseNumbers(c.q.value, "q"));
      c.token.max = view.p.length - 1;
      var token = Math.min(Number(c.token.value), view.p.length - 1);
      drawKL(root, view, token);
      var drawn = view.p[token] > 0;
      var rows = [["exact KL(p || q)", "exact", fmt(view.exact)]];
      ["k1", "k2", "k3"].forEach(function (k) {
        rows.push([k + ": mean over draws from p, \u00b1 std of one draw", k,
          fmt(view[k + "_mean"]) + " \u00b1 " + fmt(view[k + "_std"])]);
      });
      rows.push(["token " + token + " drawn: k1, k2, k3", "token_values", drawn ?
        ["k1", "k2", "k3"].map(function (k) { return fmt(view.per_token[k][token]); }).join(", ") : "p = 0: never drawn"]);
      showValues(root, rows, Object.assign({token: token}, view));
    } catch (error) { showError(root, error); }
  }

  function drawSignal(root, view) {
    var svg = newFigure(root, 266), ps = linspace(0, 1, 101);
    var left = panel(svg, [50, 24, 300, 180], [0, 1], [0, 1], "P(a group has signal)", "p: chance one answer is right");
    [1, 2, 4, 8, 16, 32].forEach(function (G) {
      var ys = ps.map(function (p) { return signalView(p, G).mixed; });
      polyline(left, ps, ys, {stroke: "#ccc"});
      // Labelled at p = 0.1, where the curves lie far enough apart to read.
      text(left.g, left.x(0.1) + 3, left.y(ys[10]) + 10, "G=" + G, {"font-size": 9, fill: "#888"});
    });
    polyline(left, ps, ps.map(function (p) { return signalView(p, view.G).mixed; }), {stroke: COLOURS.blue, "stroke-width": 2.5, "class": "vg-curve"});
    svgEl("circle", {cx: left.x(view.p), cy: left.y(view.mixed), r: 5, fill: COLOURS.red, "class": "vg-probe",
      "data-x": view.p, "data-y": view.mixed}, left.g);
    var xr = [0, 1];
    xr.ticks = false;
    var right = panel(svg, [430, 24, 300, 180], xr, [0, 1], "one group of G = " + view.G + ": its outcomes", "");
    var parts = [["all wrong", view.all_wrong, COLOURS.red], ["mixed: signal", view.mixed, COLOURS.green],
                 ["all right", view.all_right, COLOURS.blue]], base = 0;
    parts.forEach(function (part) {
      svgEl("rect", {x: right.x(0.1), width: right.x(0.45) - right.x(0.1), y: right.y(base + part[1]),
        height: right.y(base) - right.y(base + part[1]), fill: part[2], "class": "vg-share", "data-v": part[1]}, right.g);
      if (part[1] > 0.06) text(right.g, right.x(0.5), right.y(base + part[1] / 2) + 4, part[0] + " " + fmt(part[1]), {"font-size": 11});
      base += part[1];
    });
  }

  function renderSignal(root, c) {
    try {
      var view = signalView(Number(c.p.value), Number(c.G.value));
      drawSignal(root, view);
      showValues(root, [["all wrong: (1 \u2212 p)^G", "all_wrong", fmt(view.all_wrong)],
        ["all right: p^G", "all_right", fmt(view.all_right)],
        ["mixed, so the group has signal: 1 \u2212 p^G \u2212 (1 \u2212 p)^G", "mixed", fmt(view.mixed)],
        ["groups with signal per 100 sampled responses", "informative_per_100_responses", fmt(view.informative_per_100_responses)]],
        view);
    } catch (error) { showError(root, error); }
  }

  // ------------------------------------------------------------------ controls and mounting
  function control(root, spec) {
    var label = document.createElement("label"), input;
    label.className = "vg-live-control";
    var name = document.createElement("span");
    name.textContent = spec.label;
    label.appendChild(name);
    if (spec.options) {
      input = document.createElement("select");
      spec.options.forEach(function (o) {
        var option = document.createElement("option");
        option.value = o[0];
        option.textContent = o[1];
        input.appendChild(option);
      });
    } else {
      input = document.createElement("input");
      input.type = spec.range ? "range" : "text";
      if (spec.range) { input.min = spec.range[0]; input.max = spec.range[1]; input.step = spec.range[2]; }
    }
    input.name = spec.name;
    input.value = spec.value;
    label.appendChild(input);
    if (spec.range) {
      var shown = document.createElement("output");
      shown.textContent = input.value;
      input.addEventListener("input", function () { shown.textContent = input.value; });
      label.appendChild(shown);
    }
    root.querySelector(".vg-live-controls").appendChild(label);
    return input;
  }

  var WIDGETS = {
    advantages: {render: renderAdvantages, controls: function (d) {
      return [{name: "rewards", label: "rewards of the group", value: d.rewards || "1, 0, 1, 0"},
        {name: "correction", label: "std", value: "0", options: [["0", "population std (this practical)"], ["1", "sample std (TRL; Part III's labs)"]]},
        {name: "epsilon", label: "\u03b4 in std + \u03b4", value: "1e-8", options: [["1e-8", "1e-8 (this practical)"], ["1e-4", "1e-4 (TRL)"], ["0.1", "0.1"]]}];
    }},
    clip: {render: renderClip, controls: function (d) {
      var eps = d.epsilon || "0.2";
      return [{name: "advantage", label: "advantage A", value: d.advantage || "1", range: [-2, 2, 0.1]},
        {name: "epsilon", label: "\u03b5 (lower)", value: eps, range: [0.05, 0.5, 0.01]},
        {name: "epsilon_high", label: "\u03b5 high (upper)", value: d.epsilonHigh || eps, range: [0.05, 0.5, 0.01]},
        {name: "ratio", label: "a token's ratio \u03c1", value: d.ratio || "1.3", range: [0.5, 1.5, 0.01]}];
    }},
    kl: {render: renderKL, controls: function (d) {
      return [{name: "p", label: "p (the policy, sampled)", value: d.p || "0.5, 0.3, 0.2"},
        {name: "q", label: "q (the reference)", value: d.q || "0.2, 0.3, 0.5"},
        {name: "token", label: "the token drawn", value: "0", range: [0, 2, 1]}];
    }},
    signal: {render: renderSignal, controls: function (d) {
      return [{name: "p", label: "p: chance one answer is right", value: d.p || "0.2", range: [0, 1, 0.01]},
        {name: "G", label: "group size G", value: d.g || "4", range: [1, 32, 1]}];
    }}
  };

  function mount(root) {
    var kind = WIDGETS[root.getAttribute("data-widget")];
    if (!kind || root.getAttribute("data-mounted")) return;
    root.setAttribute("data-mounted", "1");
    root.innerHTML = '<div class="vg-live-controls"></div><p class="vg-live-error"></p>' +
      '<div class="vg-live-figure"></div><table class="vg-live-values"></table>';
    var controls = {};
    kind.controls(root.dataset).forEach(function (spec) { controls[spec.name] = control(root, spec); });
    Object.keys(controls).forEach(function (name) {
      ["input", "change"].forEach(function (type) {
        controls[name].addEventListener(type, function () { kind.render(root, controls); });
      });
    });
    kind.render(root, controls);
    // Turning a phone (or resizing a window) across STACK_BELOW redraws side by side or stacked.
    window.addEventListener("resize", function () {
      var stacked = root.getBoundingClientRect().width < STACK_BELOW ? "1" : "0";
      if (stacked !== root.getAttribute("data-stacked")) kind.render(root, controls);
    });
  }

  function mountAll() { document.querySelectorAll("div.vg-live[data-widget]").forEach(mount); }

  window.VGLive = {mount: mount, mountAll: mountAll, compute: {parseNumbers: parseNumbers,
    groupAdvantages: groupAdvantages, clipView: clipView, klView: klView, signalView: signalView}};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
