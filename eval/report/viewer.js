// The report's trajectory viewer and reading-list notes. Plain DOM, no libraries: the page must
// open from a file with no network. Text from episodes is only ever set as textContent.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("viewer-data").textContent);
  const episodes = data.episodes;
  const byId = new Map(episodes.map((ep) => [ep.id, ep]));
  const NOTES_KEY = "ledgergym-report-notes:" + location.pathname;
  let shown = episodes.slice();
  let index = 0;

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) {
      if (child !== null && child !== undefined) {
        node.append(typeof child === "string" ? document.createTextNode(child) : child);
      }
    }
    return node;
  }

  function contentOf(message) {
    return message.ref !== undefined ? data.strings[message.ref] : message.content;
  }

  function pretty(text) {
    if (text === null || text === undefined) return "";
    if (typeof text !== "string") return JSON.stringify(text, null, 2);
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (error) {
      return text;
    }
  }

  function cents(value) {
    return (value / 100).toFixed(2);
  }

  function fill(select, values) {
    for (const value of values) select.append(el("option", { value: value, text: value }));
  }

  function unique(pick) {
    return Array.from(new Set(episodes.flatMap(pick))).sort();
  }

  const filters = {
    run: document.getElementById("filter-run"),
    label: document.getElementById("filter-class"),
    outcome: document.getElementById("filter-outcome"),
    flag: document.getElementById("filter-flag"),
  };
  fill(filters.run, unique((ep) => [ep.run]));
  fill(filters.label, unique((ep) => [ep.label]));
  fill(filters.outcome, ["success", "failure", "grounded success"].concat(unique((ep) => [ep.outcome])));
  fill(filters.flag, unique((ep) => ep.flags));

  function matches(ep) {
    const outcome = filters.outcome.value;
    const flag = filters.flag.value;
    if (filters.run.value && ep.run !== filters.run.value) return false;
    if (filters.label.value && ep.label !== filters.label.value) return false;
    if (outcome === "success" && !ep.success) return false;
    if (outcome === "failure" && ep.success) return false;
    if (outcome === "grounded success" && ep.grounded !== true) return false;
    if (outcome && !["success", "failure", "grounded success"].includes(outcome) && ep.outcome !== outcome) return false;
    if (flag === "(any)" && ep.flags.length === 0) return false;
    if (flag && flag !== "(any)" && !ep.flags.includes(flag)) return false;
    return true;
  }

  function traceFor(ep, where, text) {
    const trace = (ep.grade && ep.grade.number_trace) || null;
    if (!trace) return null;
    return trace.find((item) => item.where === where && (item.text === text || item.value === text)) || null;
  }

  function numberSpan(ep, where, text, known) {
    const trace = (ep.grade && ep.grade.number_trace) || null;
    const span = el("span", { class: "num", text: text });
    const item = known || (trace ? traceFor(ep, where, text) : null);
    if (item) {
      span.classList.add(item.status);
      const sources = (item.sources || []).map((n) => "tool output #" + n).join(", ");
      span.title = item.status + (sources ? " — " + sources : "");
      if (item.sources && item.sources.length) {
        span.dataset.sources = item.sources.join(",");
        span.classList.add("jump");
        span.addEventListener("click", () => openSources(ep, item.sources, text));
      }
    } else {
      const untraceable = ((ep.grade && ep.grade.untraceable) || []).includes(text);
      span.classList.add(untraceable ? "untraceable" : "not-traced");
      span.title = untraceable ? "untraceable (grader)" : trace ? "not in number_trace" : "no number_trace in this log";
    }
    return span;
  }

  function markText(pre, text) {
    // rebuild the output as text nodes with each occurrence of `text` in a <mark>
    const pieces = pre.textContent.split(text);
    pre.replaceChildren();
    pieces.forEach((piece, i) => {
      if (i) pre.append(el("mark", { text: text }));
      pre.append(document.createTextNode(piece));
    });
  }

  function openSources(ep, sources, text) {
    const boxes = sources.map((n) => document.getElementById("tool-" + ep.id + "-" + n)).filter(Boolean);
    for (const box of boxes) {
      box.open = true;
      const pre = box.querySelector("pre");
      if (pre && text) markText(pre, text);
    }
    if (boxes.length) boxes[0].scrollIntoView({ block: "center" });
  }

  function summaryNode(ep, summary) {
    // every occurrence of every traced text; overlaps keep the earliest, then the longest
    const trace = ((ep.grade && ep.grade.number_trace) || []).filter((item) => item.where === "summary" && item.text);
    const spans = [];
    for (const item of trace) {
      for (let at = summary.indexOf(item.text); at >= 0; at = summary.indexOf(item.text, at + item.text.length)) {
        spans.push({ start: at, end: at + item.text.length, item: item });
      }
    }
    spans.sort((a, b) => a.start - b.start || b.end - a.end);
    const node = el("div", { class: "msg" });
    let cursor = 0;
    for (const span of spans) {
      if (span.start < cursor) continue;
      node.append(summary.slice(cursor, span.start), numberSpan(ep, "summary", span.item.text, span.item));
      cursor = span.end;
    }
    node.append(summary.slice(cursor));
    return node;
  }

  function findingsNode(ep) {
    const found = ep.findings;
    if (!found) return el("p", { class: "empty", text: "No findings submitted (or not in this log)." });
    const rows = (found.affected_invoices || []).map((item) =>
      el("tr", {}, [
        el("td", {}, [numberSpan(ep, "invoice_id", String(item.invoice_id))]),
        el("td", {}, [numberSpan(ep, "amount", String(item.overcharge_amount))]),
      ])
    );
    return el("div", {}, [
      el("p", {}, ["root cause: ", el("b", { text: String(found.root_cause) })]),
      el("table", {}, [
        el("thead", {}, [el("tr", {}, [el("th", { text: "invoice" }), el("th", { text: "overcharge" })])]),
        el("tbody", {}, rows),
      ]),
      summaryNode(ep, String(found.summary || "")),
    ]);
  }

  function callNode(call) {
    return el("div", { class: "call" }, [
      el("b", { text: call.name || "?" }),
      el("pre", { text: pretty(call.arguments) }),
    ]);
  }

  function transcriptNode(ep) {
    if (!ep.transcript) {
      return el("p", { class: "empty", text: "This log has no transcript (an older run, or --no-transcript): showing the grade, reward and findings only." });
    }
    const nodes = [];
    let tool = 0;
    for (const message of ep.transcript) {
      if (message.role === "system") {
        nodes.push(el("details", { class: "msg system" }, [el("summary", { text: "system prompt" }), el("pre", { text: contentOf(message) || "" })]));
      } else if (message.role === "tool") {
        const output = pretty(contentOf(message));
        const box = el("details", { class: "msg tool", id: "tool-" + ep.id + "-" + tool }, [
          el("summary", { text: "tool output #" + tool + " (" + (message.name || "?") + ", " + output.length + " chars)" }),
          el("pre", { text: output }),
        ]);
        if (output.length < 400) box.open = true;
        nodes.push(box);
        tool += 1;
      } else if (message.role === "user" && contentOf(message) === ep.complaint) {
        nodes.push(el("div", { class: "msg user" }, [el("span", { class: "role", text: "user" }), " (the complaint above)"]));
      } else {
        const calls = (message.tool_calls || []).map(callNode);
        nodes.push(el("div", { class: "msg " + message.role }, [
          el("div", { class: "role", text: message.role }),
          contentOf(message) ? el("div", { text: contentOf(message) }) : null,
          ...calls,
        ]));
      }
    }
    if (ep.transcript_truncated) nodes.push(el("p", { class: "warning", text: "Transcript truncated by the log's size cap." }));
    return el("div", {}, nodes);
  }

  function tableOf(entries) {
    return el("table", {}, [el("tbody", {}, entries.map(([key, value]) => el("tr", {}, [el("th", { text: key }), el("td", { text: value })])))]);
  }

  function creditNode(ep) {
    const credits = (ep.grade && ep.grade.credits) || {};
    const entries = Object.entries(credits).map(([invoice, value]) => [invoice, cents(value)]);
    const over = (ep.grade && ep.grade.over_credited) || {};
    for (const [invoice, value] of Object.entries(over)) entries.push([invoice + " over-credited", cents(value)]);
    const drafted = [];
    for (const message of ep.transcript || []) {
      for (const call of message.tool_calls || []) if (call.name === "draft_credit_note") drafted.push(callNode(call));
    }
    return el("div", {}, [
      entries.length ? tableOf(entries) : el("p", { class: "empty", text: "No credit note drafted." }),
      ...drafted,
    ]);
  }

  function verdictNode(ep) {
    if (ep.error) return el("p", { class: "warning", text: "Error episode (no grade): " + ep.error });
    const grade = ep.grade || {};
    const keys = ["success", "grounded_success", "investigated", "submitted", "truncated", "reported_label", "label_correct", "invoices_correct", "amounts_correct", "credits_correct", "database_clean", "false_reversal", "hallucinated_numbers", "untraceable", "changed_tables"];
    return tableOf(keys.filter((key) => key in grade).map((key) => [key, JSON.stringify(grade[key])]));
  }

  function rewardNode(ep) {
    const entries = Object.entries(ep.terms || {}).map(([key, value]) => [key, Number(value).toFixed(3)]);
    entries.push(["total", ep.reward === null ? "–" : Number(ep.reward).toFixed(3)]);
    if (ep.reward_verdict !== null) entries.push(["binary reward (from terms)", ep.reward_verdict ? "1" : "0"]);
    return tableOf(entries);
  }

  function render() {
    const box = document.getElementById("episode");
    const position = document.getElementById("ep-position");
    box.replaceChildren();
    if (!shown.length) {
      box.append(el("p", { class: "empty", text: "No episode matches the filters." }));
      position.textContent = "0 / 0";
      return;
    }
    const ep = shown[index];
    position.textContent = index + 1 + " / " + shown.length;
    box.dataset.episode = ep.id;
    const verdict = ep.success ? el("span", { class: "ok", text: "success" }) : el("span", { class: "bad", text: "failure" });
    box.append(
      el("div", { class: "ep-head" }, [
        el("b", { text: ep.id }), " · ", ep.run, " · ", ep.label, " · ", ep.difficulty, " · sample ", String(ep.sample), " · ",
        verdict, ep.grounded === null ? "" : ep.grounded ? " (grounded)" : " (not grounded)",
        " · reward ", ep.reward === null ? "–" : Number(ep.reward).toFixed(2), " · ", ep.outcome,
        ep.end_reason ? " · ended: " + ep.end_reason : "",
        " · ", String(ep.stats.tool_calls), " tool calls, ", String(ep.stats.turns), " turns",
        el("div", {}, ep.flags.map((flag) => el("span", { class: "flag", text: flag }))),
      ]),
      el("h3", { text: "Complaint" }),
      ep.complaint ? el("div", { class: "msg user", text: ep.complaint }) : el("p", { class: "empty", text: "Complaint not in this log." }),
      el("h3", { text: "Transcript" }),
      transcriptNode(ep),
      el("div", { class: "grid" }, [
        el("div", {}, [el("h3", { text: "Findings" }), findingsNode(ep)]),
        el("div", {}, [el("h3", { text: "Credit notes" }), creditNode(ep)]),
        el("div", {}, [el("h3", { text: "Reward by term" }), rewardNode(ep)]),
        el("div", {}, [el("h3", { text: "Grader verdict" }), verdictNode(ep)]),
      ])
    );
  }

  function applyFilters(keepId) {
    shown = episodes.filter(matches);
    const at = keepId ? shown.findIndex((ep) => ep.id === keepId) : -1;
    index = at >= 0 ? at : 0;
    render();
  }

  function move(step) {
    if (!shown.length) return;
    index = (index + step + shown.length) % shown.length;
    history.replaceState(null, "", "#ep=" + shown[index].id);
    render();
  }

  function show(id) {
    if (!byId.has(id)) return false;
    if (!shown.some((ep) => ep.id === id)) {
      for (const select of Object.values(filters)) select.value = "";
    }
    applyFilters(id);
    document.getElementById("viewer").scrollIntoView();
    return true;
  }

  function fromHash() {
    const match = /^#ep=(.+)$/.exec(decodeURIComponent(location.hash));
    if (match) show(match[1]);
  }

  for (const select of Object.values(filters)) select.addEventListener("change", () => applyFilters(shown[index] && shown[index].id));
  document.getElementById("ep-prev").addEventListener("click", () => move(-1));
  document.getElementById("ep-next").addEventListener("click", () => move(1));
  document.addEventListener("keydown", (event) => {
    const tag = (event.target && event.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "ArrowRight" || event.key === "j") move(1);
    else if (event.key === "ArrowLeft" || event.key === "k") move(-1);
  });
  window.addEventListener("hashchange", fromHash);

  // reading list: checkbox and note state kept in localStorage, exported as JSON notes
  function loadNotes() {
    try {
      return JSON.parse(localStorage.getItem(NOTES_KEY) || "{}");
    } catch (error) {
      return {};
    }
  }
  const notes = loadNotes();
  function saveNotes() {
    try {
      localStorage.setItem(NOTES_KEY, JSON.stringify(notes));
    } catch (error) {
      // storage unavailable (private mode): the export still works for this session
    }
  }
  for (const box of document.querySelectorAll(".read-box")) {
    box.checked = Boolean((notes[box.dataset.ep] || {}).read);
    box.addEventListener("change", () => {
      notes[box.dataset.ep] = Object.assign(notes[box.dataset.ep] || {}, { read: box.checked });
      saveNotes();
    });
  }
  for (const input of document.querySelectorAll(".read-note")) {
    input.value = (notes[input.dataset.ep] || {}).note || "";
    input.addEventListener("input", () => {
      notes[input.dataset.ep] = Object.assign(notes[input.dataset.ep] || {}, { note: input.value });
      saveNotes();
    });
  }
  function exportNotes() {
    const items = Array.from(document.querySelectorAll(".read-box")).map((box) => {
      const ep = byId.get(box.dataset.ep) || {};
      const state = notes[box.dataset.ep] || {};
      return { episode: box.dataset.ep, run: ep.run, scenario_id: ep.scenario_id, sample: ep.sample, label: ep.label, read: Boolean(state.read), note: state.note || "" };
    });
    const text = JSON.stringify({ report: location.pathname, notes: items }, null, 2);
    document.getElementById("notes-out").value = text;
    const link = el("a", { href: URL.createObjectURL(new Blob([text], { type: "application/json" })), download: "reading-notes.json" });
    link.click();
    return text;
  }
  const exportButton = document.getElementById("export-notes");
  if (exportButton) exportButton.addEventListener("click", exportNotes);

  applyFilters(null);
  fromHash();
  window.reportViewer = {
    count: () => shown.length,
    current: () => (shown[index] ? shown[index].id : null),
    show: show,
    next: () => move(1),
    exportNotes: exportNotes,
  };
  document.body.dataset.viewerReady = "1";
})();
