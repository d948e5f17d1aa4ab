"use strict";
// The item browser: decodes the embedded data (gzip + base64) once, then filters and
// renders one page of rows at a time, so a full MMLU panel stays responsive.
(function () {
  const PAGE = 50;
  const $ = (id) => document.getElementById(id);
  let D = null, matches = [], page = 0, searchCache = {};

  async function decode() {
    const b64 = $("nabench-data").textContent.trim();
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  const str = (code) => (code >= 0 ? D.strings[code] : null);
  const right = (c) => (c >= "A" && c <= "Z") || c === "+";
  const answered = (c) => c !== undefined && c !== ".";
  const state = (cfg, run, i) => { const r = D.res[cfg] && D.res[cfg][run]; return r ? r.s[i] : "."; };

  function fill(select, values, labels) {
    values.forEach((v, k) => select.append(el("option", { value: v }, labels ? labels[k] : v)));
  }

  function searchText(variant, i) {
    const key = variant;
    if (!searchCache[key]) {
      const t = D.text[variant] || D.text.original;
      searchCache[key] = D.ids.map((id, k) => {
        if (!t) return id.toLowerCase();
        const parts = [id, str(t.q[k]) || ""];
        for (const c of t.ch[k] || []) parts.push(str(c));
        return parts.join("\n").toLowerCase();
      });
    }
    return searchCache[key][i];
  }

  function outcome(kind, variant, run, i) {
    const o = state("original", run, i), v = state(variant, run, i);
    if (kind === "flip") return answered(o) && answered(v) && right(o) && !right(v);
    if (kind === "gain") return answered(o) && answered(v) && !right(o) && right(v);
    if (kind === "wrong") return answered(v) && !right(v);
    if (kind === "invalid") return v === "?";
    return true;
  }

  function applyFilters() {
    const subj = $("f-subject").value, variant = $("f-variant").value;
    const model = $("f-model").value, kind = $("f-outcome").value;
    const text = $("f-text").value.trim().toLowerCase();
    const runs = model ? [model] : D.models;
    const subjCode = subj === "" ? -1 : D.subjects.indexOf(subj);
    for (const o of $("f-outcome").options) {
      if (o.value === "flip") o.textContent = `right on original, wrong on ${variant}`;
      if (o.value === "gain") o.textContent = `wrong on original, right on ${variant}`;
      if (o.value === "wrong") o.textContent = `wrong on ${variant}`;
    }
    matches = [];
    for (let i = 0; i < D.ids.length; i++) {
      if (subjCode >= 0 && D.subj[i] !== subjCode) continue;
      if (kind && !runs.some((r) => outcome(kind, variant, r, i))) continue;
      if (text && !searchText(variant, i).includes(text)) continue;
      matches.push(i);
    }
    page = 0;
    renderPage();
  }

  function mark(c) {
    if (!answered(c)) return el("span", { class: "inv", title: "not answered" }, "·");
    if (c === "?") return el("span", { class: "inv", title: "invalid" }, "?");
    return right(c) ? el("span", { class: "ok", title: "right" }, "✓") : el("span", { class: "bad", title: "wrong" }, "✗");
  }

  function renderPage() {
    const pages = Math.max(1, Math.ceil(matches.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    const rows = $("rows");
    rows.replaceChildren();
    const variant = $("f-variant").value, model = $("f-model").value;
    const t = D.text[variant] || D.text.original;
    const runs = model ? [model] : D.models;
    for (const i of matches.slice(page * PAGE, (page + 1) * PAGE)) {
      const id = D.ids[i], q = t ? str(t.q[i]) : null;
      const marks = el("span", { class: "marks", "aria-label": `${variant}: ${runs.length} model(s)` });
      for (const r of runs) marks.append(mark(state(variant, r, i)));
      rows.append(el("li", { "data-id": id },
        el("a", { class: "id", href: `#item=${id}` }, id),
        el("span", { class: "subj" }, D.subjects[D.subj[i]] || ""),
        el("span", { class: "q" }, q ? (q.length > 160 ? q.slice(0, 160) + "…" : q) : ""), " ", marks));
    }
    $("status").textContent = `${matches.length} of ${D.ids.length} items match.`;
    $("page").textContent = `page ${page + 1} of ${pages}`;
    $("prev").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
  }

  function variantBlock(cfg, i) {
    const t = D.text[cfg];
    const box = el("div", { class: "variant" }, el("h4", {}, cfg));
    if (!t || t.q[i] < 0) { box.append(el("p", { class: "none" }, "text not available")); return box; }
    const na = str(t.na[i]);
    const list = el("ol", { type: "A" });
    (t.ch[i] || []).forEach((c, k) => {
      const text = str(c), isKey = k === t.key[i], isNa = na !== null && text === na;
      const li = el("li", { class: [isKey ? "key" : "", isNa ? "na" : ""].join(" ").trim() }, text);
      if (isKey) li.append(el("span", { class: "tag" }, "key"));
      if (isNa) li.append(el("span", { class: "tag" }, "inserted"));
      list.append(li);
    });
    box.append(list);
    return box;
  }

  function answersTable(i) {
    const cfgs = D.configs;
    const head = el("tr", {}, el("th", { scope: "col" }, "run"), ...cfgs.map((c) => el("th", { scope: "col" }, c)));
    const body = el("tbody");
    for (const run of D.runs) {
      const tr = el("tr", {}, el("th", { scope: "row" }, run));
      for (const c of cfgs) {
        const r = D.res[c] && D.res[c][run], s = r ? r.s[i] : ".";
        const conf = r && r.conf && r.conf[i] !== null ? ` ${r.conf[i].toFixed(3)}` : "";
        const raw = r && r.raw ? str(r.raw[i]) : null;
        const letter = answered(s) && s !== "?" && s !== "+" && s !== "-" ? s.toUpperCase() : "";
        const td = el("td", { "data-run": run, "data-config": c }, mark(s), " ", letter, conf);
        if (raw !== null) td.append(el("details", {}, el("summary", {}, "raw"), el("pre", { class: "raw" }, raw)));
        tr.append(td);
      }
      body.append(tr);
    }
    return el("div", { class: "scroll" }, el("table", { id: "answers" },
      el("caption", {}, "Answers (✓ right, ✗ wrong, ? invalid; confidence where recorded)"), el("thead", {}, head), body));
  }

  function showItem(id) {
    const i = D.ids.indexOf(id), view = $("item-view"), body = $("item-body");
    view.hidden = false;
    if (i < 0) { body.replaceChildren(el("p", {}, `No item ${id} in this report.`)); return; }
    $("item-h").textContent = `Item ${id}`;
    const t = D.text.original || D.text[D.configs[0]];
    body.replaceChildren(
      el("p", { class: "subj" }, D.subjects[D.subj[i]] || ""),
      el("p", { class: "question" }, t && t.q[i] >= 0 ? str(t.q[i]) : "(question text not available)"),
      ...D.configs.filter((c) => D.text[c]).map((c) => variantBlock(c, i)),
      answersTable(i));
    $("item-h").setAttribute("tabindex", "-1");
    $("item-h").focus();
    view.scrollIntoView();
  }

  function onHash() {
    const m = /^#item=(.+)$/.exec(location.hash);
    if (m) showItem(decodeURIComponent(m[1]));
  }

  async function main() {
    D = await decode();
    fill($("f-subject"), D.subjects);
    fill($("f-model"), D.runs);
    const variants = D.configs.filter((c) => c !== "original");
    fill($("f-variant"), variants.concat(D.configs.includes("original") ? ["original"] : []));
    for (const id of ["f-subject", "f-variant", "f-model", "f-outcome"]) $(id).addEventListener("change", applyFilters);
    let timer = null;
    $("f-text").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilters, 200); });
    $("prev").addEventListener("click", () => { page--; renderPage(); });
    $("next").addEventListener("click", () => { page++; renderPage(); });
    window.addEventListener("hashchange", onHash);
    applyFilters();
    onHash();
    document.body.dataset.ready = "1";
  }
  main().catch((e) => { $("status").textContent = `Could not load the items: ${e}`; document.body.dataset.ready = "error"; });
})();
