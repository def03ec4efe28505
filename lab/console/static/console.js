// Mercado's live console: plain JavaScript, no framework. The page
// listens to /console/events (a "tick" about once a second, a
// "checkout" per traced checkout) and changes the shop through the
// console's API, sending the admin token when one is typed in.
"use strict";

const $ = (sel) => document.querySelector(sel);
const SVG = "http://www.w3.org/2000/svg";

// The Okabe–Ito palette, and a dash pattern per series, so that no line
// is told apart by its colour alone.
const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];
const DASHES = ["", "8 4", "2 4", "12 4 3 4", "4 2", "1 3", "16 4"];

// Outcomes as the hops report them, each with a symbol and words.
const OUTCOMES = {
  ok: ["✓", "ok", "ok"],
  timeout: ["◷", "timeout (own cap)", "bad"],
  budget_exhausted: ["▽", "budget exhausted", "bad"],
  skipped: ["↷", "skipped: budget below the floor", "skip"],
  breaker_open: ["⊘", "breaker open", "skip"],
  bulkhead_full: ["▣", "bulkhead full", "skip"],
  canceled: ["✗", "canceled", "bad"],
  error: ["✗", "error", "bad"],
};
function outcome(o) {
  return OUTCOMES[o] || ["?", o || "unknown", "bad"];
}

// The chain's nodes: the hop whose metric describes each, and where it
// is drawn. The leaves are orders' calls (docs/call-graph.md).
const LEAVES = [
  { hop: "catalog", label: "catalog · reserve stock" },
  { hop: "fraud", label: "payments · fraud screen" },
  { hop: "payments", label: "payments · charge" },
  { hop: "shipping", label: "shipping · book shipment" },
  { hop: "estimate", label: "estimate · optional" },
  { hop: "audit", label: "audit · fire-forward" },
];

const view = {
  state: null,
  checkouts: [], // newest last
  selected: null, // the checkout the user picked, kept after it leaves the list; null follows the newest
  tick: null,
  mechanismsDirty: false,
};

// ---- talking to the console ----------------------------------------

async function send(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = $("#token").value.trim();
  if (token) headers["Authorization"] = "Bearer " + token;
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!resp.ok) {
    let detail = resp.statusText;
    try {
      detail = (await resp.json()).detail || detail;
    } catch (e) {
      // not a problem document: keep the status text
    }
    throw new Error(resp.status + " " + detail);
  }
  return resp.status === 204 ? null : resp.json();
}

function say(text, isError) {
  const m = $("#message");
  m.textContent = (isError ? "✗ " : "✓ ") + text;
  m.classList.toggle("error", !!isError);
}

// act runs one change and says how it went.
// f may return what the shop now has, read back from it, to say after.
async function act(what, f) {
  try {
    const now = await f();
    say(typeof now === "string" ? what + ". " + now : what);
  } catch (e) {
    say(what + " failed: " + e.message, true);
  }
}

function listen() {
  const es = new EventSource("events");
  es.addEventListener("open", () => {
    $("#conn").textContent = "● live";
    $("#conn").classList.add("live");
  });
  es.addEventListener("error", () => {
    $("#conn").textContent = "○ reconnecting…";
    $("#conn").classList.remove("live");
  });
  es.addEventListener("tick", (ev) => {
    const t = JSON.parse(ev.data);
    view.tick = t;
    view.state = t.state;
    drawState(t.state);
    drawCharts(t);
  });
  es.addEventListener("checkout", (ev) => {
    const co = JSON.parse(ev.data);
    if (view.checkouts.some((c) => c.n === co.n)) return;
    view.checkouts.push(co);
    view.checkouts.sort((a, b) => a.n - b.n);
    if (view.checkouts.length > 12) view.checkouts.shift();
    drawCheckouts();
  });
}

// ---- state: mode, faults, network, traffic, scenario ----------------

function drawState(st) {
  const modes = st.services.map((s) => (s.mode ? s.mode.mode : "no answer"));
  const gw = st.services.find((s) => s.name === "gateway");
  const gwMode = gw && gw.mode ? gw.mode.mode : "";
  const same = modes.every((m) => m === modes[0]);
  $("#mode-now").textContent = same
    ? "Mode: " + modes[0] + " · all " + modes.length + " services"
    : "Mode: mixed · " + st.services.map((s, i) => s.name + " " + modes[i]).join(", ");
  for (const b of document.querySelectorAll(".mode-choice")) {
    b.setAttribute("aria-pressed", String(b.dataset.mode === gwMode && same));
  }
  if (gw && gw.mode && !view.mechanismsDirty) drawMechanisms(gw.mode.mechanisms);
  drawFaults(st);
  drawNetwork(st);
  const tr = st.traffic;
  // The form shows the traffic that runs (a preset's, another page's),
  // unless someone is typing in it.
  if (tr.running && !$("#traffic-form").contains(document.activeElement)) {
    $("#rate-checkout").value = tr.checkout;
    $("#rate-browse").value = tr.browse;
    $("#rate-export").value = tr.export;
    $("#deadline").value = tr.deadline_ms;
  }
  $("#traffic-now").textContent = tr.running
    ? "● running: " + tr.checkout + " checkouts/s, " + tr.browse + " browse/s, " + tr.export + " exports/s, deadline " + tr.deadline_ms + " ms"
    : "○ stopped";
  drawScenarios(st);
  drawRun(st.run);
  drawLessons(st);
}

// drawLessons draws a button per lesson preset once, and marks the one
// last applied with what to watch.
function drawLessons(st) {
  const box = $("#lessons");
  if (!box.children.length) {
    for (const p of st.presets) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "lesson";
      b.dataset.preset = p.name;
      b.title = p.watch;
      b.textContent = p.title;
      box.append(b);
      b.addEventListener("click", () =>
        act("Applied " + p.title, async () => {
          const res = await send("POST", "api/presets/" + p.name);
          view.selected = null; // follow the lesson's checkouts
          drawState(res.state);
          return res.preset.watch;
        }));
    }
  }
  for (const b of box.children) b.setAttribute("aria-pressed", String(b.dataset.preset === st.preset));
  const now = st.presets.find((p) => p.name === st.preset);
  if (now) $("#lesson-watch").textContent = now.title + ": " + now.watch;
}

function drawMechanisms(mech) {
  const form = $("#mechanisms");
  for (const [name, value] of Object.entries(mech)) {
    let input = form.querySelector("[name='" + name + "']");
    if (!input) {
      const label = document.createElement("label");
      if (typeof value === "boolean") {
        input = document.createElement("input");
        input.type = "checkbox";
        label.append(input, " " + name.replaceAll("_", " "));
      } else {
        input = document.createElement("select");
        const options = name === "retries" ? ["naive", "budgeted", "off"] : ["parallel", "sequential"];
        for (const o of options) input.append(new Option(o, o));
        label.append(name + " ", input);
      }
      input.name = name;
      input.addEventListener("input", () => (view.mechanismsDirty = true));
      form.append(label);
    }
    if (input.type === "checkbox") input.checked = value;
    else input.value = value;
  }
}

function fillSelect(sel, values) {
  const now = [...sel.options].map((o) => o.value);
  if (now.length === values.length && now.every((v, i) => v === values[i])) return;
  const keep = sel.value;
  sel.replaceChildren(...values.map((v) => new Option(v, v)));
  if (values.includes(keep)) sel.value = keep;
}

function specText(spec) {
  return Object.entries(spec)
    .map(([k, v]) => k + "=" + v)
    .join(",");
}

// The fault form's duration fields, by the spec's key.
const faultFields = [["latency", "#fault-latency"], ["p50", "#fault-p50"], ["p99", "#fault-p99"], ["hang", "#fault-hang"]];

// fillFaultForm shows the fault now in force on the chosen service and
// method (empty fields when there is none), so that a change starts from
// what the shop has rather than from the last method's values.
function fillFaultForm(st) {
  const svc = st && st.services.find((s) => s.name === $("#fault-service").value);
  const spec = (svc && svc.faults && svc.faults[$("#fault-method").value]) || {};
  for (const [key, id] of faultFields) $(id).value = spec[key] || "";
  $("#fault-error").value = spec.error_rate ? String(spec.error_rate) : "";
}

// faultsNow says what a service's faults are, as the admin API answered.
function faultsNow(view) {
  const entries = Object.entries((view && view.faults) || {});
  if (entries.length === 0) return view.service + " now has no fault";
  return view.service + " now has " + entries.map(([m, spec]) => m + ": " + specText(spec)).join("; ");
}

function drawFaults(st) {
  fillSelect($("#fault-service"), st.services.map((s) => s.name));
  const svc = st.services.find((s) => s.name === $("#fault-service").value);
  fillSelect($("#fault-method"), svc ? [...svc.methods, "*"] : []);
  const items = [];
  for (const s of st.services) {
    for (const [method, spec] of Object.entries(s.faults || {})) {
      const li = document.createElement("li");
      li.textContent = "⚠ " + s.name + " " + method + ": " + specText(spec) + " ";
      const clear = document.createElement("button");
      clear.type = "button";
      clear.textContent = "Clear " + s.name;
      clear.addEventListener("click", () => act("Cleared " + s.name + "'s faults", () => send("DELETE", "api/faults/" + s.name)));
      li.append(clear);
      items.push(li);
    }
  }
  if (items.length === 0) {
    const li = document.createElement("li");
    li.textContent = "no fault in force";
    items.push(li);
  }
  if (!document.activeElement || !$("#faults-now").contains(document.activeElement)) $("#faults-now").replaceChildren(...items);
}

function drawNetwork(st) {
  const panel = $("#network-panel");
  panel.hidden = st.network === null;
  if (st.network === null) return;
  fillSelect($("#network-link"), st.network.map((l) => l.link));
  const items = st.network
    .filter((l) => l.faults && l.faults !== "none" && l.faults.length)
    .map((l) => {
      const li = document.createElement("li");
      li.textContent = "⚠ " + l.link + ": " + (typeof l.faults === "string" ? l.faults : JSON.stringify(l.faults));
      return li;
    });
  if (st.network_error) items.push(Object.assign(document.createElement("li"), { textContent: "✗ " + st.network_error }));
  if (items.length === 0) items.push(Object.assign(document.createElement("li"), { textContent: "no network fault in force" }));
  $("#network-now").replaceChildren(...items);
}

function drawScenarios(st) {
  fillSelect($("#scenario"), st.scenarios);
}

function drawRun(run) {
  const box = $("#run");
  if (!run) {
    box.textContent = "No run yet.";
    return;
  }
  const parts = [];
  const p = (text, cls) => {
    const el = document.createElement("p");
    el.textContent = text;
    if (cls) el.className = cls;
    parts.push(el);
    return el;
  };
  p("Run " + run.n + ": " + run.name + (run.quick ? " (quick)" : "") + " · " + run.state);
  const bar = document.createElement("progress");
  bar.max = run.total_s || 1;
  bar.value = run.done_s;
  bar.setAttribute("aria-label", "progress of the run");
  parts.push(bar);
  p(Math.round(run.done_s) + " of " + Math.round(run.total_s) + " s");
  if (run.state === "running") {
    p("mode " + (run.mode || "…") + " · phase " + (run.phase || "…"));
    p(run.fault_on ? "⚠ fault on: " + run.faults : "○ no fault in this phase", run.fault_on ? "fault-on" : "");
  }
  if (run.error) p("✗ " + run.error, "fault-on");
  for (const line of run.invalid || []) p("⚠ " + line, "fault-on");
  if (run.checks && run.checks.length) {
    const ul = document.createElement("ul");
    for (const c of run.checks) ul.append(Object.assign(document.createElement("li"), { textContent: c }));
    parts.push(ul);
  }
  if (run.verdict) {
    const words = { PASS: "every check passed", FAIL: "a check failed", INVALID: "a run was INVALID: its checks are not a measurement" };
    p("Verdict: " + run.verdict + " (" + (words[run.verdict] || "") + ")", run.verdict === "PASS" ? "" : "fault-on");
  }
  if (run.report) {
    const a = document.createElement("a");
    a.href = run.report.replace(/^\/console\//, "");
    a.textContent = "Open the run's report";
    a.target = "_blank";
    a.rel = "noopener";
    const el = document.createElement("p");
    el.append(a);
    parts.push(el);
  }
  box.replaceChildren(...parts);
}

// ---- the chain -------------------------------------------------------

function shown() {
  if (view.checkouts.length === 0) return null;
  return view.selected || view.checkouts[view.checkouts.length - 1];
}

function resultText(co) {
  const sym = { good: "✓", late: "◷", processing: "…", failed: "✗" }[co.result] || "?";
  return sym + " " + co.result;
}

// drawCheckouts updates the list in place: a button keeps its node while
// it stays in the list, so a click is not lost when a checkout arrives
// between the press and the release.
function drawCheckouts() {
  const list = $("#checkouts");
  const co = shown();
  const kept = new Map([...list.children].map((li) => [Number(li.firstChild.dataset.n), li]));
  const items = [...view.checkouts].reverse().map((c) => {
    let li = kept.get(c.n);
    if (!li) {
      li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.n = c.n;
      b.textContent = "#" + c.n + " " + resultText(c) + " " + Math.round(c.took_ms) + " ms";
      b.setAttribute("aria-label", "checkout " + c.n + ": " + c.result + " in " + Math.round(c.took_ms) + " ms, HTTP " + (c.status || "none"));
      b.addEventListener("click", () => {
        const newest = view.checkouts[view.checkouts.length - 1];
        view.selected = newest && newest.n === c.n ? null : c;
        drawCheckouts();
      });
      li.append(b);
    }
    li.firstChild.setAttribute("aria-current", String(co !== null && co.n === c.n));
    return li;
  });
  const wanted = new Set(items);
  for (const li of [...list.children]) if (!wanted.has(li)) li.remove();
  items.forEach((li, i) => {
    if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
  });
  drawChain(co);
  drawHopTable(co);
}

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

function text(parent, x, y, content, cls) {
  const t = el("text", { x, y }, parent);
  if (cls) t.setAttribute("class", cls);
  t.textContent = content;
  return t;
}

// drawChain draws the chain for one checkout: every node with the budget
// it had left when its caller called it, as a bar that shrinks from the
// whole deadline, hop after hop.
function drawChain(co) {
  const svg = $("#chain");
  svg.replaceChildren();
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#777" }, marker);

  const hops = {};
  for (const h of (co && co.hops) || []) if (!(h.name in hops)) hops[h.name] = h;
  const deadline = co ? co.deadline_ms : 1000;
  const bars = [];

  // node draws a box with its lines of text and, when it knows one, the
  // budget bar; it returns the box's right and middle, for the arrows.
  const node = (x, y, w, h, name, lines, hop, rem) => {
    const g = el("g", { class: "node" + (co && !hop && name !== "client" && name !== "gateway" ? " idle" : "") }, svg);
    el("rect", { x, y, width: w, height: h, rx: 6, class: "box" }, g);
    text(g, x + 8, y + 19, name, "name");
    lines.forEach((l, i) => {
      const t = text(g, x + 8, y + 38 + i * 18, l[0], l[1] || "");
      if (l[2]) t.setAttribute("data-hop-outcome", l[2]);
    });
    if (rem !== undefined) {
      const bw = w - 16;
      el("rect", { x: x + 8, y: y + h - 12, width: bw, height: 7, class: "budget-back" }, g);
      const bar = el("rect", { x: x + 8, y: y + h - 12, width: bw, height: 7, class: "budget" }, g);
      bars.push([bar, Math.max(0, Math.min(1, rem / deadline)) * bw, rem / deadline]);
    }
    return [x + w, y + h / 2, x, y + h / 2];
  };
  // What a hop had of the client's deadline: in budgeted mode the budget
  // it was given; in the others only the client's clock, which the shop
  // never saw — once it is spent, how long ago the client gave up.
  const carried = !co || co.carried;
  const remText = (h, brief) => {
    if (!h.has_rem) return brief ? "budget unknown" : "budget left: unknown";
    if (carried) return brief ? fmt(h.rem_ms) + " ms left" : "budget left " + fmt(h.rem_ms) + " ms";
    if (h.rem_ms < 0) return (brief ? "" : "client ") + "gave up " + fmt(-h.rem_ms) + " ms ago";
    return (brief ? "" : "client's deadline in ") + fmt(h.rem_ms) + " ms" + (brief ? " of client's" : "");
  };
  const hopLines = (h) => {
    if (!h) return [["not among its hops"]];
    const [sym, words, cls] = outcome(h.outcome);
    return [
      [remText(h, false), !carried && h.has_rem && h.rem_ms < 0 ? "outcome-bad" : ""],
      ["timeout " + (h.timeout_ms ? fmt(h.timeout_ms) + " ms" : "none")],
      ["took " + fmt(h.took_ms) + " ms"],
      [sym + " " + words, "outcome-" + cls, h.outcome],
    ];
  };

  const client = node(4, 95, 96, 110, "client", co ? [["deadline", ""], [deadline + " ms"], [resultText(co), co.result === "good" ? "outcome-ok" : "outcome-bad"]] : [["deadline"], [deadline + " ms"]], null, co ? deadline : undefined);
  const gwTotal = hops.total;
  const gateway = node(122, 95, 136, 110, "gateway", co ? [[carried ? "budget " + deadline + " ms" : "no budget set"],
    gwTotal ? ["total " + fmt(gwTotal.took_ms) + " ms"] : [co.status ? "no timing" : "no answer", "outcome-bad"],
    ["HTTP " + (co.status || "none")]] : [["the edge"]], gwTotal, co ? deadline : undefined);
  const orders = node(280, 80, 232, 140, "orders", hopLines(hops.orders), hops.orders, hops.orders && hops.orders.has_rem ? hops.orders.rem_ms : undefined);
  el("path", { d: "M" + client[0] + "," + client[1] + " L" + (gateway[2] - 2) + "," + gateway[3], class: "edge" }, svg);
  el("path", { d: "M" + gateway[0] + "," + gateway[1] + " L" + (orders[2] - 2) + "," + orders[3], class: "edge" }, svg);
  LEAVES.forEach((leaf, i) => {
    const x = 540, y = 4 + i * 49, h = hops[leaf.hop];
    const g = el("g", { class: "node leaf" + (co && !h ? " idle" : "") }, svg);
    el("rect", { x, y, width: 396, height: 45, rx: 6, class: "box" }, g);
    text(g, x + 8, y + 17, leaf.label, "name");
    if (h) {
      // Left: the call's timeout and time; right: the budget it had
      // left, as words and a bar, and how it ended.
      const [sym, words, cls] = outcome(h.outcome);
      text(g, x + 8, y + 38, "timeout " + (h.timeout_ms ? fmt(h.timeout_ms) + " ms" : "none") + " · took " + fmt(h.took_ms) + " ms");
      text(g, x + 226, y + 17, remText(h, true), !carried && h.has_rem && h.rem_ms < 0 ? "outcome-bad" : "");
      text(g, x + 226, y + 40, sym + " " + words, "outcome-" + cls).setAttribute("data-hop-outcome", h.outcome);
      if (h.has_rem) {
        el("rect", { x: x + 226, y: y + 22, width: 162, height: 6, class: "budget-back" }, g);
        const bar = el("rect", { x: x + 226, y: y + 22, width: 162, height: 6, class: "budget" }, g);
        bars.push([bar, Math.max(0, Math.min(1, h.rem_ms / deadline))* 162, h.rem_ms / deadline]);
      }
    } else {
      text(g, x + 8, y + 38, co ? "not among this checkout's hops" : "");
    }
    el("path", { d: "M" + orders[0] + "," + orders[1] + " C526," + orders[1] + " 526," + (y + 22) + " " + (x - 2) + "," + (y + 22), class: "edge" }, svg);
  });

  // The bars start full and shrink to what was left, one hop after the
  // other: the budget spent on the way.
  bars.sort((a, b) => b[2] - a[2]);
  requestAnimationFrame(() => {
    bars.forEach(([bar, width, share], i) => {
      bar.style.transitionDelay = i * 0.12 + "s";
      bar.setAttribute("width", String(width));
      if (share <= 0) bar.classList.add("gone");
      else if (share < 0.25) bar.classList.add("low");
    });
  });
  $("#chain-caption").textContent = co
    ? "Checkout #" + co.n + ": " + resultText(co) + " in " + fmt(co.took_ms) + " ms of its " + deadline + " ms deadline" + (co.why ? " (" + co.why + ")" : "") + ". " +
      (carried
        ? "Each bar is the budget left when the hop was called."
        : (co.mode || "This mode") + " does not carry the deadline: each hop waits for its own timeout, and its bar is what was left of the client's deadline, which the shop never saw.")
    : "No checkout yet: press “One checkout”, or start traffic.";
}

function fmt(ms) {
  if (Math.abs(ms) >= 100) return String(Math.round(ms));
  return ms.toFixed(1);
}

function drawHopTable(co) {
  const body = $("#hops tbody");
  $("#hops-caption").textContent = co ? "Hops of checkout #" + co.n + " (" + co.deadline_ms + " ms deadline)" : "Hops of the checkout shown";
  const rows = ((co && co.hops) || []).map((h) => {
    const tr = document.createElement("tr");
    tr.dataset.hop = h.name;
    tr.dataset.took = h.took_ms;
    if (h.has_rem) tr.dataset.rem = h.rem_ms;
    const [sym, words, cls] = outcome(h.outcome);
    const cells = [
      h.name,
      h.has_rem ? fmt(h.rem_ms) + " ms" : "—",
      h.timeout_ms ? fmt(h.timeout_ms) + " ms" : h.name === "total" ? "" : "none",
      h.name === "total" ? "" : fmt(h.start_ms) + " ms",
      fmt(h.took_ms) + " ms",
      h.outcome ? sym + " " + words : "",
    ];
    cells.forEach((c, i) => {
      const td = document.createElement(i === 0 ? "th" : "td");
      if (i === 0) td.scope = "row";
      td.textContent = c;
      if (i === 5 && h.outcome) td.className = "outcome-" + cls;
      tr.append(td);
    });
    return tr;
  });
  body.replaceChildren(...rows);
}

// ---- charts ----------------------------------------------------------

// lineChart draws series of [t (ms), y] points over the last minute, with
// an optional dashed line (the deadline) and a legend in words.
// lineChart draws series of [t, value] points over the last minute. Its
// viewBox is its size on the page, so that its text is the size the
// style sheet says; the legend flows over as many rows as it needs.
function lineChart(svg, series, opts) {
  const W = Math.max(280, Math.round(svg.getBoundingClientRect().width) || 460);
  const CH = 8.6; // the width of a character of 16 px text, about
  const legend = [];
  let lx = 4, ly = 16;
  series.forEach((s) => {
    const w = 26 + s.name.length * CH + 14;
    if (lx > 4 && lx + w > W) [lx, ly] = [4, ly + 20];
    legend.push([lx, ly]);
    lx += w;
  });
  const L = 50, R = 10, B = 26, T = (series.length ? ly : 0) + 16;
  const H = T + Math.round(W * 0.32) + B;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.replaceChildren();
  const now = opts.now;
  const from = now - 60000;
  let yMax = opts.yMin || 1;
  for (const s of series) for (const p of s.points) yMax = Math.max(yMax, p[1]);
  if (opts.line) yMax = Math.max(yMax, opts.line * 1.15);
  yMax = nice(yMax);
  const x = (t) => L + ((t - from) / 60000) * (W - L - R);
  const y = (v) => H - B - (v / yMax) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    el("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }, svg);
    text(svg, 2, y(v) + 4, short(v));
  }
  el("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }, svg);
  el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }, svg);
  text(svg, L, H - 6, "−60 s");
  text(svg, (L + W) / 2 - 16, H - 6, "−30 s");
  text(svg, W - R - 32, H - 6, "now");
  // A scenario run's phases: faulty ones shaded and named, and each
  // mode's start named, so that a line is read against what the shop had.
  for (const b of opts.bands || []) {
    if (b.from_ms >= now) continue; // the schedule's phases still to come
    const x0 = x(Math.max(b.from_ms, from)), x1 = x(Math.min(b.to_ms, now));
    if (x1 <= L) continue;
    const first = !opts.bands.some((o) => o !== b && o.mode === b.mode && o.from_ms < b.from_ms);
    if (b.fault_on) el("rect", { x: x0, y: T, width: Math.max(x1 - x0, 1), height: H - B - T, class: "band" }, svg);
    if (first) el("line", { x1: x0, x2: x0, y1: T, y2: H - B, class: "mode-start" }, svg);
    if (b.from_ms < from) continue;
    // A label that would run past the plot's right edge ends at it.
    const label = (words, y) => text(svg, Math.max(L, Math.min(x0 + 3, W - R - 3 - words.length * CH)), y, words, "band-label");
    if (first) label(b.mode, T + 32);
    if (b.fault_on) label("⚠ " + b.phase, H - B - 4);
  }
  drawShopBands(svg, opts.shopBands || [], { x, from, now, T, B, H, L, right: W - R - 3 });
  if (opts.unit) text(svg, L + 4, T + 14, opts.unit, "unit");
  if (opts.line) {
    el("line", { x1: L, x2: W - R, y1: y(opts.line), y2: y(opts.line), class: "deadline" }, svg);
    text(svg, W - R - 140, y(opts.line) - 4, "deadline " + short(opts.line) + " ms", "deadline-label");
  }
  let points = 0;
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => p[0] >= from);
    points += pts.length;
    if (pts.length === 0) return;
    const colour = COLOURS[i % COLOURS.length];
    el("polyline", {
      points: pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "),
      class: "series",
      stroke: colour,
      "stroke-dasharray": s.dash !== undefined ? s.dash : DASHES[i % DASHES.length],
    }, svg);
    // The legend, above the plot: a sample of each line's dash beside
    // its name.
    const [lx, ly] = legend[i];
    el("line", { x1: lx, x2: lx + 22, y1: ly - 5, y2: ly - 5, stroke: colour, "stroke-width": 3, "stroke-dasharray": s.dash !== undefined ? s.dash : DASHES[i % DASHES.length] }, svg);
    text(svg, lx + 26, ly, s.name, "legend");
  });
  if (points === 0) text(svg, L + 20, (T + H - B) / 2, opts.empty || "no data yet", "empty");
  svg.dataset.points = String(points);
}

// drawShopBands draws the shop's modes and faults as the console's ticks
// read them (the gateway view's bands), as a run's phases are drawn: a
// dotted line at each change, the mode named at the top where it
// changed, and each stretch with faults shaded and named at the bottom
// with its mode ("naive · ⚠ shipping CreateShipment:hang=5s"), the whole
// words on hover.
function drawShopBands(svg, bands, g) {
  bands.forEach((b, i) => {
    const end = i + 1 < bands.length ? bands[i + 1].from_ms : g.now;
    if (end <= g.from || !b.faults) return;
    const x0 = g.x(Math.max(b.from_ms, g.from)), x1 = g.x(Math.min(end, g.now));
    el("rect", { x: x0, y: g.T, width: Math.max(x1 - x0, 1), height: g.H - g.B - g.T, class: "band" }, svg);
  });
  const modeName = namer(svg, [g.T + 32], g);
  const faultName = namer(svg, [g.H - g.B - 4, g.H - g.B - 24], g);
  for (let i = bands.length - 1; i >= 0 && bands[i].from_ms >= g.from; i--) {
    const b = bands[i];
    const x0 = g.x(b.from_ms);
    const words = b.mode + " · " + (b.faults ? "⚠ " + b.faults : "no fault");
    el("title", {}, el("line", { x1: x0, x2: x0, y1: g.T, y2: g.H - g.B, class: "mode-start" }, svg)).textContent = words;
    if (i === 0 || bands[i - 1].mode !== b.mode) modeName(x0, b.mode, words);
    if (b.faults) faultName(x0, words, words);
  }
}

// namer places names on rows of a chart, newest first: each on the row
// with the most room before the names already there, cut short to it
// (ending in "…"), or left out when too little is left, so that none
// writes over another. A name whose line is near the right edge starts
// left of it, so that a change just seen can be read.
function namer(svg, ys, g) {
  const MIN = 70; // the least room worth a name, unless it is shorter
  const SHIFT = 120; // the room a name near the right edge is given
  const rows = ys.map((y) => ({ y, limit: g.right }));
  return (x0, words, hover) => {
    const row = rows.reduce((a, r) => (r.limit > a.limit ? r : a));
    const t = text(svg, 0, row.y, words, "band-label");
    const width = textWidth(t);
    const lx = Math.max(g.L, Math.min(x0 + 3, g.right - Math.min(width, SHIFT)));
    if (row.limit - lx < Math.min(width, MIN)) {
      t.remove();
      return;
    }
    t.setAttribute("x", lx);
    el("title", {}, t).textContent = hover;
    fitText(t, row.limit - lx);
    row.limit = lx - 8;
  };
}

// textWidth is an SVG text's drawn width, or an estimate while it is not
// drawn.
function textWidth(t) {
  return t.getComputedTextLength() || t.firstChild.data.length * 8.6;
}

// fitText shortens an SVG text to width, ending it in "…".
function fitText(t, width) {
  const node = t.firstChild;
  while (node.data.length > 2 && textWidth(t) > width) node.data = node.data.slice(0, -2) + "…";
}

function nice(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function short(v) {
  if (v >= 1000) return (v / 1000).toFixed(v % 1000 ? 1 : 0) + "k";
  if (v >= 10 || v === 0) return String(Math.round(v));
  return v.toFixed(1);
}

function drawCharts(t) {
  const now = t.at;
  const classes = Object.keys(t.classes).sort();
  const at = (p) => p.t + 500; // the middle of the second
  // Whose traffic the charts show, in words: the console's as its
  // clients saw it, or, while it sends none, what the gateway answered,
  // with the shop's modes and faults as bands.
  const gateway = t.view === "gateway";
  const bands = gateway ? [] : (t.state.run && t.state.run.bands) || [];
  const shopBands = gateway ? t.shop_bands || [] : [];
  const running = t.state.run && t.state.run.state === "running";
  const viewWords = gateway
    ? "Showing: traffic the gateway answered (sent from elsewhere: the console sends none now), timed at the gateway"
    : (running ? "Showing: the scenario run's traffic" : "Showing: the console's traffic") + ", timed by its clients (a request never answered counts too)";
  const viewLine = $("#charts-view");
  viewLine.dataset.view = t.view;
  if (viewLine.textContent !== viewWords) viewLine.textContent = viewWords;
  lineChart($("#chart-goodput"), classes.map((c) => ({ name: c + " good/s", points: t.classes[c].map((p) => [at(p), p.good]) })), {
    now, bands, shopBands, unit: "per second", empty: "no traffic: start some",
  });
  const interactive = classes.filter((c) => c !== "export");
  const lat = [];
  for (const c of interactive) {
    lat.push({ name: c + " p99", points: t.classes[c].map((p) => [at(p), p.p99_ms]), dash: "" });
    lat.push({ name: c + " p50", points: t.classes[c].map((p) => [at(p), p.p50_ms]), dash: "6 4" });
  }
  lineChart($("#chart-latency"), lat, { now, bands, shopBands, unit: "ms", line: t.deadline_ms.checkout, empty: "no traffic: start some" });

  const gauges = t.gauges;
  const reasons = new Set();
  for (const g of gauges) for (const [r, v] of Object.entries(g.skipped)) if (v > 0) reasons.add(r);
  const retried = gauges.some((g) => g.retries > 0) ? [{ name: "retries", points: gauges.map((g) => [g.t, g.retries]) }] : [];
  lineChart($("#chart-skipped"), retried.concat([...reasons].sort().map((r) => ({ name: r.replaceAll("_", " "), points: gauges.map((g) => [g.t, g.skipped[r] || 0]) }))), {
    now, unit: "per second", empty: "nothing skipped or retried",
  });
  lineChart($("#chart-late"), [
    { name: "late answers/s", points: gauges.map((g) => [g.t, g.late]) },
    { name: "late work s/s", points: gauges.map((g) => [g.t, g.late_work]) },
  ], { now, unit: "per second" });
  drawPools(gauges);
  drawBreakers(gauges, t.state);
}

function drawPools(gauges) {
  const last = gauges[gauges.length - 1];
  const box = $("#pools");
  if (!last) {
    box.textContent = "no sample yet";
    return;
  }
  const rows = [];
  for (const [name, p] of Object.entries(last.pools)) {
    let peak = 0;
    for (const g of gauges) if (g.pools[name]) peak = Math.max(peak, g.pools[name].in_flight);
    if (peak > 0) rows.push({ name, now: p.in_flight, peak, cap: p.capacity });
  }
  rows.sort((a, b) => b.peak / b.cap - a.peak / a.cap || a.name.localeCompare(b.name));
  if (rows.length === 0) {
    box.textContent = "No pool has held work this minute.";
    return;
  }
  box.replaceChildren(...rows.slice(0, 7).map((r) => {
    const row = document.createElement("div");
    row.className = "pool";
    const name = document.createElement("span");
    name.textContent = r.name.replace("/", " ");
    const bar = document.createElement("span");
    bar.className = "bar";
    const fill = document.createElement("span");
    fill.className = "fill" + (r.now >= r.cap ? " full" : "");
    fill.style.width = Math.min(100, (100 * r.now) / r.cap) + "%";
    const peak = document.createElement("span");
    peak.className = "peak";
    peak.style.left = Math.min(100, (100 * r.peak) / r.cap) + "%";
    peak.title = "peak this minute";
    bar.append(fill, peak);
    const words = document.createElement("span");
    words.className = "words";
    words.textContent = r.now + " of " + r.cap + (r.now >= r.cap ? " FULL" : "") + " (peak " + r.peak + ")";
    row.append(name, bar, words);
    return row;
  }));
}

function drawBreakers(gauges, st) {
  const last = gauges[gauges.length - 1];
  const list = $("#breakers");
  if (!last) return;
  const gw = st.services.find((s) => s.name === "gateway");
  const on = gw && gw.mode ? gw.mode.mechanisms.breakers : true;
  const items = Object.keys(last.breakers).sort().map((k) => {
    const v = last.breakers[k];
    const li = document.createElement("li");
    const [sym, words, cls] = v >= 2 ? ["○", "open", "open"] : v >= 1 ? ["◐", "half-open", "half"] : ["●", "closed", ""];
    li.textContent = k.replace("/", "→") + " " + sym + " " + words;
    if (cls) li.className = cls;
    return li;
  });
  if (!on) items.unshift(Object.assign(document.createElement("li"), { textContent: "(breakers are off in this mode)" }));
  list.replaceChildren(...items);
}

// ---- controls --------------------------------------------------------

function dur(id) {
  return $(id).value.trim();
}

function wire() {
  for (const b of document.querySelectorAll(".mode-choice")) {
    b.addEventListener("click", () => act("Switched the shop to " + b.dataset.mode, () => send("PUT", "api/mode", { mode: b.dataset.mode })));
  }
  $("#apply-mechanisms").addEventListener("click", () => {
    const gw = view.state && view.state.services.find((s) => s.name === "gateway");
    const mode = gw && gw.mode ? gw.mode.mode : "budgeted";
    const mechanisms = {};
    for (const input of $("#mechanisms").querySelectorAll("[name]")) mechanisms[input.name] = input.type === "checkbox" ? input.checked : input.value;
    act("Applied the switches over " + mode, async () => {
      await send("PUT", "api/mode", { mode, mechanisms });
      view.mechanismsDirty = false;
    });
  });
  $("#fault-service").addEventListener("change", () => {
    if (!view.state) return;
    drawFaults(view.state);
    fillFaultForm(view.state);
  });
  $("#fault-method").addEventListener("change", () => fillFaultForm(view.state));
  $("#fault-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const spec = {};
    for (const [key, id] of faultFields) if (dur(id)) spec[key] = dur(id);
    if (dur("#fault-error")) spec.error_rate = Number(dur("#fault-error"));
    const svc = $("#fault-service").value, method = $("#fault-method").value;
    act("Set " + svc + " " + method + ": " + (specText(spec) || "no fault"), async () =>
      faultsNow(await send("PUT", "api/faults/" + encodeURIComponent(svc) + "/" + encodeURIComponent(method), spec)));
  });
  $("#clear-faults").addEventListener("click", () => act("Cleared every fault", () => send("DELETE", "api/faults")));
  $("#network-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const link = $("#network-link").value;
    act("Set " + link + ": " + $("#network-spec").value, () => send("PUT", "api/network/" + encodeURIComponent(link), { spec: $("#network-spec").value }));
  });
  $("#clear-network").addEventListener("click", () => act("Cleared the wire's faults", () => send("DELETE", "api/network")));
  $("#traffic-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const rates = {
      checkout: Number($("#rate-checkout").value), browse: Number($("#rate-browse").value),
      export: Number($("#rate-export").value), deadline_ms: Number($("#deadline").value),
    };
    act("Started traffic", () => send("PUT", "api/traffic", rates));
  });
  $("#stop-traffic").addEventListener("click", () => act("Stopped traffic", () => send("DELETE", "api/traffic")));
  const chainOnly = (on) => {
    document.body.classList.toggle("chain-only", on);
    $("#chain-only").setAttribute("aria-pressed", String(on));
  };
  $("#chain-only").addEventListener("click", () => chainOnly(!document.body.classList.contains("chain-only")));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && document.body.classList.contains("chain-only")) chainOnly(false);
  });
  $("#one-checkout").addEventListener("click", () => act("Sent one checkout", async () => {
    view.selected = null;
    await send("POST", "api/checkout", { deadline_ms: Number($("#deadline").value) || 1000 });
  }));
  $("#scenario-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act("Started " + $("#scenario").value, () => send("POST", "api/scenario", { name: $("#scenario").value, quick: $("#quick").checked }));
  });
  $("#stop-scenario").addEventListener("click", () => act("Stopped the run", () => send("DELETE", "api/scenario")));
}

wire();
drawChain(null);
listen();
