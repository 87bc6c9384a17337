// kai dashboard: renders the document of the latest look (embedded in the page, then /api/state every few
// seconds) and runs what-ifs. Every name from the cluster goes into the page as text (el() and textContent only:
// nothing here parses markup from data).
"use strict";

(() => {
  const PAGE_ROWS = 100;
  const MAX_LINES = 12;
  const COLOURS = ["#2f6fdb", "#e0662b", "#1e7d3a", "#8e44ad", "#c0392b", "#16a085", "#d4a017", "#7f8c8d",
    "#2c3e50", "#e84393", "#6c5ce7", "#00838f"];
  const SERIES = { allocated: "allocated", fairShare: "fair share", deserved: "deserved", quota: "quota" };

  const $ = (id) => document.getElementById(id);
  const state = { doc: null, selected: null, filter: "", shown: PAGE_ROWS, chartKeys: {}, charts: {} };
  const stats = { generation: 0, renders: 0, polls: 0, firstRenderMs: null, lastRefreshMs: null, lastRenderMs: null };
  window.kaiDashboard = stats;

  // An element with properties and children; strings become text nodes.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key === "title") node.title = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else throw new Error(`el: unexpected property ${key}`);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function fill(id, nodes) {
    $(id).replaceChildren(...nodes);
  }

  function num(value) {
    if (value === null || value === undefined) return "—";
    if (value === -1) return "∞";
    return Number.isInteger(value) ? value.toLocaleString("en") : String(Math.round(value * 100) / 100);
  }

  function count(n, word) {
    return `${num(n)} ${word}${n === 1 ? "" : "s"}`;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
    let rest = Math.max(0, Math.round(seconds));
    const parts = [];
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
      if (rest >= size) {
        parts.push(`${Math.floor(rest / size)}${unit}`);
        rest %= size;
      }
    }
    if (!parts.length || (parts.length < 2 && rest)) parts.push(`${rest}s`);
    return parts.slice(0, 2).join(" ");
  }

  function when(epoch) {
    return epoch ? new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 19) + "Z" : "—";
  }

  // ------------------------------------------------------------------------------------------ header, summary

  function renderHead(doc) {
    $("label").textContent = doc.label;
    document.title = `kai dashboard — ${doc.label}`;
    const error = $("error");
    error.hidden = !doc.error;
    error.textContent = doc.error || "";
    renderStatus(doc);
    if (!doc.view) return;
    const summary = doc.view.summary;
    const reasons = Object.entries(summary.waitingByReason || {}).map(([kind, n]) => `${num(n)} ${kind}`);
    const finished = summary.finished ? `, ${num(summary.finished)} finished` : "";
    $("summary").textContent = `${count(summary.pods, "pod")}: ${num(summary.placed)} placed, ${num(summary.waiting)} waiting` +
      (reasons.length ? ` (${reasons.join(", ")})` : "") + finished;
    $("moment").textContent = `${doc.view.moment} · scheduler config: ${doc.view.config}`;
  }

  function renderStatus(doc) {
    if (doc.looking) {
      $("status").textContent = `reading ${doc.label}: one scheduling cycle over the whole cluster…`;
      return;
    }
    const ago = duration(Date.now() / 1000 - doc.refreshedAt);
    const took = doc.lookSeconds !== undefined ? ` (the look took ${doc.lookSeconds.toFixed(1)} s)` : "";
    $("status").textContent = `look ${doc.generation}, ${ago} ago${took}; refreshed without reloading`;
  }

  // ------------------------------------------------------------------------------------------ queues

  function children(queues) {
    const below = new Map();
    for (const queue of queues) {
      if (!below.has(queue.parent)) below.set(queue.parent, []);
      below.get(queue.parent).push(queue.queue);
    }
    return below;
  }

  function subtree(queues, name) {
    const below = children(queues);
    const found = new Set();
    const stack = [name];
    while (stack.length) {
      const queue = stack.pop();
      if (found.has(queue)) continue;
      found.add(queue);
      stack.push(...(below.get(queue) || []));
    }
    return found;
  }

  function shareBar(gpu) {
    const top = Math.max(gpu.deserved === -1 ? 0 : gpu.deserved, gpu.fairShare, gpu.allocated, gpu.requested, 1e-9);
    const bar = el("span", { class: "bar", title: `allocated ${num(gpu.allocated)} of a fair share of ${num(gpu.fairShare)} GPUs (deserved ${num(gpu.deserved)})` });
    const held = el("span", { class: "fill" });
    held.style.width = `${Math.min(100, (100 * gpu.allocated) / top)}%`;
    const mark = el("span", { class: "mark" });
    mark.style.left = `${Math.min(100, (100 * gpu.fairShare) / top)}%`;
    bar.append(held, mark);
    return bar;
  }

  function renderQueues(view) {
    const rows = view.queues.map((queue) => {
      const name = el("td", { class: "queue-name" }, queue.queue,
        queue.displayName && queue.displayName !== queue.queue ? el("div", { class: "display" }, queue.displayName) : null);
      name.style.paddingLeft = `${6 + 16 * queue.depth}px`;
      const row = el("tr", { class: "clickable" + (queue.queue === state.selected ? " selected" : ""), "data-queue": queue.queue });
      row.addEventListener("click", () => select(queue.queue));
      const counts = queue.running !== undefined ? `${num(queue.running)} / ${num(queue.pending)}` : "—";
      const gpu = (queue.resources || {}).gpu;
      if (queue.problem || !gpu) {
        row.classList.add("unusable");
        row.append(name, el("td", { class: "text" }, `kai cannot use it: ${queue.problem || "no numbers"}`));
        row.lastChild.colSpan = 9;
        row.append(el("td", {}, num(queue.inLine)), el("td", {}, counts));
        return row;
      }
      row.append(name, ...[gpu.quota, gpu.limit, gpu.weight, gpu.deserved, gpu.fairShare, gpu.allocated, gpu.requested]
        .map((value) => el("td", {}, num(value))));
      row.append(el("td", {}, shareBar(gpu)), el("td", {}, num(queue.inLine)), el("td", {}, counts),
        el("td", {}, gpu.usage === null || gpu.usage === undefined ? "off" : `${Math.round(gpu.usage * 100)}%`));
      return row;
    });
    fill("queue-rows", rows);
  }

  function select(queue) {
    state.selected = state.selected === queue ? null : queue;
    state.shown = PAGE_ROWS;
    renderQueues(state.doc.view);
    renderPending(state.doc.view);
    renderHistory(state.doc);
  }

  // ------------------------------------------------------------------------------------------ pending

  function matches(row, queues, text) {
    if (queues && !queues.has(row.queue)) return false;
    if (!text) return true;
    return [row.podgroup, row.workload || "", row.queue, row.namespace].some((field) => field.toLowerCase().includes(text));
  }

  function why(reason) {
    if (!reason) return el("td", { class: "why text" }, "—");
    const causes = reason.causes.map((cause) => el("li", {}, cause));
    if (reason.moreCauses) causes.push(el("li", {}, `… and ${num(reason.moreCauses)} more`));
    return el("td", { class: "why text" }, el("span", { class: "kind" }, reason.kind), reason.text,
      causes.length ? el("ul", {}, causes) : null);
  }

  function fix(row) {
    // kai queues' words: the cheapest proven fix, else what the search came to, else what it needs
    return el("td", { class: "fix text" + (row.proven ? " proven" : ""), title: row.fixSearch || "" }, row.fix || "—");
  }

  function place(position) {
    if (!position.inLine) return el("td", { title: position.why || "not in line" }, "—");
    const inQueue = position.inQueue || position.cluster;
    const title = position.cluster ? `${position.cluster.place} of ${position.cluster.of} in the cluster` : "";
    return el("td", { title }, num(inQueue.place));
  }

  function renderPending(view) {
    const queues = state.selected ? subtree(view.queues, state.selected) : null;
    const text = state.filter.trim().toLowerCase();
    const rows = view.pending.filter((row) => matches(row, queues, text));
    const shown = rows.slice(0, state.shown).map((row) => {
      const since = row.waitingSince;
      const start = row.estimatedStart || {};
      return el("tr", { "data-podgroup": row.podgroup },
        place(row.position),
        el("td", { class: "text" }, row.workload ? row.workload.replace("/", " ") : row.podgroup,
          el("div", { class: "note" }, `podgroup ${row.podgroup}`)),
        el("td", { class: "text" }, row.queue),
        el("td", {}, num(row.pods)),
        el("td", {}, num(row.gpus)),
        el("td", { title: when(since) }, since ? `${duration(view.at - since)} ago` : "—"),
        why(row.reason),
        fix(row),
        el("td", { class: "text", title: start.basis || "" }, start.at ? when(start.at) : row.state === "pipelined" ? "after evictions" : "—"));
    });
    fill("pending-rows", shown);
    const where = state.selected ? ` in ${state.selected}` : "";
    $("pending-count").textContent = `${count(rows.length, "podgroup")} waiting${where}` +
      (rows.length > shown.length ? `, the first ${num(shown.length)} shown` : "");
    $("pending-more").hidden = rows.length <= shown.length;
  }

  // ------------------------------------------------------------------------------------------ charts

  function chart(slot, key, options, data) {
    const target = $(slot);
    if (state.chartKeys[slot] === key) return;
    state.chartKeys[slot] = key;
    if (state.charts[slot]) state.charts[slot].destroy();
    state.charts[slot] = null;
    if (!data[0].length) {
      target.replaceChildren(el("p", { class: "note" }, "no points yet"));
      return;
    }
    target.replaceChildren();
    const width = Math.max(320, target.clientWidth || 480);
    state.charts[slot] = new uPlot({ width, height: 240, ...options }, data, target);
  }

  // A time axis of one point would span years: an hour each side of it instead; one of a few seconds (a dashboard
  // just started) is widened to a minute, and its ticks are whole seconds at least, told in UTC as the page's times.
  const TIME = {
    x: {
      time: true,
      range: (_, min, max) => (min === max ? [min - 3600, max + 3600] : max - min < 60 ? [max - 60, max] : [min, max]),
    },
  };
  const TICKS = [1, 5, 10, 15, 30, 60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 7 * 86400];

  function clockTicks(u, splits) {
    const span = u.scales.x.max - u.scales.x.min;
    return splits.map((t) => {
      const text = new Date(t * 1000).toISOString();
      return span > 2 * 86400 ? text.slice(5, 10) + " " + text.slice(11, 16) : text.slice(11, span > 600 ? 16 : 19);
    });
  }

  const TIME_AXIS = { incrs: TICKS, values: clockTicks, label: "UTC" };

  function lines(names, dashed) {
    return names.map((name, index) => ({
      label: name, stroke: COLOURS[index % COLOURS.length], width: 2, spanGaps: true, ...(dashed ? { dash: [6, 4] } : {}),
    }));
  }

  function leaves(view, history) {
    const parents = new Set(view.queues.map((queue) => queue.parent));
    const known = view.queues.map((queue) => queue.queue).filter((name) => !parents.has(name));
    const others = Object.keys(history.queues).filter((name) => !view.queues.some((queue) => queue.queue === name));
    return [...known, ...others].filter((name) => history.queues[name] && history.queues[name].allocated);
  }

  function renderHistory(doc) {
    const history = doc.history;
    $("history-source").textContent = `from ${history.source}`;
    const note = $("history-note");
    note.hidden = !history.note;
    note.textContent = history.note ? `Not from a better source: ${history.note}.` : "";
    const peak = (name) => Math.max(0, ...history.queues[name].allocated.filter((v) => v !== null));
    const queues = leaves(doc.view, history).sort((a, b) => peak(b) - peak(a)).slice(0, MAX_LINES);
    const base = `${doc.generation}`;
    chart("history-all", `${base}|${queues.join(",")}`,
      { series: [{}, ...lines(queues)], axes: [TIME_AXIS, { label: "GPUs" }], scales: TIME },
      [history.times, ...queues.map((name) => history.queues[name].allocated)]);
    const selected = state.selected || (doc.view.pending[0] || {}).queue || queues[0];
    $("history-queue-title").textContent = selected ? `queue ${selected}` : "no queue";
    const series = selected && history.queues[selected] ? history.queues[selected] : {};
    const names = Object.keys(SERIES).filter((name) => series[name]);
    chart("history-queue", `${base}|${selected}|${names.join(",")}`,
      { series: [{}, ...lines(names.map((name) => SERIES[name]))], axes: [TIME_AXIS, { label: "GPUs" }], scales: TIME },
      [names.length ? history.times : [], ...names.map((name) => series[name])]);
  }

  // ------------------------------------------------------------------------------------------ nodes, cycles

  function renderNodes(nodes) {
    let gpus = 0, whole = 0, sharedGpus = 0, sharedHeld = 0;
    const tiles = nodes.names.map((name, index) => {
      const total = nodes.gpus[index], held = nodes.whole[index], shared = nodes.shared[index];
      const part = shared.reduce((sum, value) => sum + value, 0);
      gpus += total; whole += held; sharedGpus += shared.length; sharedHeld += part;
      const sharedText = shared.length ? `, ${shared.length} shared (${shared.map(num).join(", ")} held)` : "";
      const tile = el("div", {
        class: "tile" + (nodes.ready[index] ? "" : " down"), "data-node": name,
        title: `${name}: ${num(total)} GPUs, ${num(held)} held whole${sharedText}; ${num(nodes.pods[index])} pods` +
          (nodes.ready[index] ? "" : "; takes no pods"),
      });
      if (total > 0) {
        const wholeBar = el("div", { class: "whole" });
        wholeBar.style.width = `${(100 * Math.min(held, total)) / total}%`;
        const sharedBar = el("div", { class: "shared" });
        sharedBar.style.width = `${(100 * Math.min(shared.length, Math.max(0, total - held))) / total}%`;
        tile.append(wholeBar, sharedBar);
      }
      return tile;
    });
    fill("node-tiles", tiles);
    $("nodes-totals").textContent = `${count(nodes.names.length, "node")}, ${num(gpus)} GPUs: ${num(whole)} held whole, ` +
      `${num(sharedGpus)} shared (${num(sharedHeld)} of them held), ${num(Math.max(0, gpus - whole - sharedGpus))} free`;
  }

  function renderCycles(cycles) {
    $("cycles-source").textContent = `from ${cycles.source}`;
    const note = $("cycles-note");
    note.hidden = !cycles.unavailable;
    note.textContent = cycles.unavailable ? `Not known: ${cycles.unavailable}` : "";
    fill("cycle-rows", [...cycles.cycles].reverse().map((cycle) => el("tr", {},
      el("td", {}, num(cycle.cycle)), el("td", {}, when(cycle.at)), el("td", {}, num(cycle.binds)),
      el("td", {}, num(cycle.pipelined)), el("td", {}, num(cycle.evictions)), el("td", {}, num(cycle.unschedulable)))));
  }

  function renderProblems(view) {
    $("problems").hidden = !view.problems.length;
    fill("problem-rows", view.problems.map((problem) => el("tr", {},
      el("td", { class: "text" }, problem.severity), el("td", { class: "text" }, `${problem.kind} ${problem.name}`),
      el("td", { class: "text" }, problem.field), el("td", { class: "text" }, problem.problem))));
  }

  function render(doc) {
    const started = performance.now();
    state.doc = doc;
    stats.generation = doc.generation;
    renderHead(doc);
    if (doc.view) {
      renderQueues(doc.view);
      renderPending(doc.view);
      renderHistory(doc);
      renderNodes(doc.nodes);
      renderCycles(doc.cycles);
      renderProblems(doc.view);
    }
    stats.renders += 1;
    stats.lastRenderMs = performance.now() - started;
    if (doc.view && stats.firstRenderMs === null) {
      stats.firstRenderMs = performance.now();
      performance.mark("kai-first-render");
    }
  }

  // ------------------------------------------------------------------------------------------ refresh

  async function poll() {
    const started = performance.now();
    stats.polls += 1;
    try {
      const answer = await fetch("/api/state", {
        cache: "no-store", headers: { "If-None-Match": `"kai-${state.doc.generation}"` },
      });
      if (answer.status === 200) {
        render(await answer.json());
        stats.lastRefreshMs = performance.now() - started;
      } else if (answer.status === 304) {
        renderStatus(state.doc);
      } else {
        $("status").textContent = `the dashboard answered ${answer.status}; trying again`;
      }
    } catch (error) {
      $("status").textContent = `the dashboard does not answer (${error.message}); trying again`;
    }
    const every = state.doc.looking ? 1000 : 1000 * Math.min(2, state.doc.refreshSeconds || 2);
    setTimeout(poll, every);
  }

  // ------------------------------------------------------------------------------------------ what if

  function whatIfForm() {
    const form = new FormData($("whatif-form"));
    return Object.fromEntries([...form.entries()].map(([key, value]) => [key, String(value)]));
  }

  async function runWhatIf(event) {
    event.preventDefault();
    const status = $("whatif-status");
    status.classList.remove("error");
    status.textContent = "starting…";
    $("whatif-run").disabled = true;
    try {
      const answer = await fetch("/api/whatif", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(whatIfForm()),
      });
      const body = await answer.json();
      if (answer.status !== 202) {
        failed(body.error || `the dashboard answered ${answer.status}`);
        return;
      }
      follow(body.id);
    } catch (error) {
      failed(error.message);
    }
  }

  function failed(message) {
    const status = $("whatif-status");
    status.classList.add("error");
    status.textContent = message;
    $("whatif-run").disabled = false;
  }

  async function follow(run) {
    const answer = await fetch(`/api/whatif/${run}`, { cache: "no-store" });
    const body = await answer.json();
    if (body.state === "running") {
      $("whatif-status").textContent = `running both: cycle ${body.cycle} of ${body.cycles}…`;
      setTimeout(() => follow(run), 500);
      return;
    }
    if (body.state === "failed") {
      failed(body.error);
      return;
    }
    $("whatif-run").disabled = false;
    $("whatif-status").textContent = `done: ${body.cycles} cycles of both runs`;
    renderWhatIf(body.result);
  }

  function renderWhatIf(result) {
    $("whatif-result").hidden = false;
    const hours = (result.periodSeconds * result.cycles) / 3600;
    $("whatif-changes-done").textContent = `Changes: ${result.changes.join("; ")} — ${result.cycles} cycles, one every ` +
      `${duration(result.periodSeconds)} (${duration(result.periodSeconds * result.cycles)} simulated)`;
    fill("whatif-totals", result.totals.map((row) => el("tr", {}, row.map((cell, index) =>
      el("td", { class: index ? "" : "text" }, cell)))));
    fill("whatif-queue-head", result.queueColumns.map((column) => el("th", {}, column)));
    fill("whatif-queues", result.queueRows.map((row) => el("tr", { "data-queue": row[0] }, row.map((cell) => el("td", {}, cell)))));
    const [unit, size] = hours < 2 ? ["minutes", 60] : ["hours", 3600];
    const elapsed = result.elapsed.map((seconds) => seconds / size);
    const axes = [{ label: `${unit} simulated` }, { label: "GPUs" }];
    const figures = [["utilisation", "GPU utilisation (share of the cluster's GPUs)",
      [result.runs.base.utilisation, result.runs.changed.utilisation]]];
    const active = Object.keys(result.runs.base.queues).filter((queue) => [result.runs.base, result.runs.changed]
      .some((run) => run.queues[queue].some((value) => value))).slice(0, 8);
    for (const queue of active) {
      figures.push([`queue-${queue}`, `queue ${queue}: GPUs allocated`, [result.runs.base.queues[queue], result.runs.changed.queues[queue]]]);
    }
    const slots = figures.map(([id, caption], index) => el("figure", {},
      el("figcaption", {}, caption), el("div", { class: "chart", "data-figure": id, "data-slot": `whatif-${index}` })));
    fill("whatif-charts", slots);
    figures.forEach(([, , runs], index) => {
      const target = slots[index].lastChild;
      target.id = `whatif-chart-${index}`;
      state.chartKeys[target.id] = null;
      chart(target.id, `${Date.now()}-${index}`, {
        series: [{}, { label: "base", stroke: COLOURS[0], width: 2 }, { label: "changed", stroke: COLOURS[1], width: 2, dash: [6, 4] }],
        // a share is drawn from 0 to 1 (around 0.999 to 1, the ticks would all read "1")
        axes: index ? axes : [axes[0], { label: "share" }],
        scales: index ? { x: { time: false } } : { x: { time: false }, y: { range: (_, min, max) => [0, Math.max(1, max)] } },
      }, [elapsed, ...runs]);
    });
  }

  // ------------------------------------------------------------------------------------------ start

  function start() {
    const initial = JSON.parse($("kai-document").textContent);
    render(initial);
    $("pending-filter").addEventListener("input", (event) => {
      state.filter = event.target.value;
      state.shown = PAGE_ROWS;
      renderPending(state.doc.view);
    });
    $("pending-more").addEventListener("click", () => {
      state.shown += PAGE_ROWS;
      renderPending(state.doc.view);
    });
    $("whatif-form").addEventListener("submit", runWhatIf);
    setTimeout(poll, initial.looking ? 1000 : 2000);
  }

  start();
})();
