// The denoisesum web page: reviews in (typed, pasted or read from a CSV/JSONL file, parsed here in
// the browser), POST /v1/summarize, the summary out with each sentence coloured by its support.
// No libraries, nothing loaded from elsewhere (the page's Content-Security-Policy forbids it).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const els = {
    reviews: $("reviews"), file: $("file"), setChoice: $("set-choice"), setSelect: $("set-select"),
    count: $("review-count"), button: $("summarize"), slice: $("slice"),
    maxWords: $("max-words"), message: $("message"), result: $("result"),
    summary: $("summary"), share: $("share"), evidence: $("evidence"), model: $("model-name"),
    copy: $("copy"), downloadText: $("download-text"), downloadJson: $("download-json"),
  };
  let loadedSets = [];  // review sets read from a file: [{id, reviews}]
  let last = null;  // {reviews, response} of the summary shown
  let pinned = null;  // index of the sentence whose evidence stays shown

  // ---- reading the reviews -----------------------------------------------------------------

  function splitMode() {
    return document.querySelector('input[name="split"]:checked').value;
  }

  function setSplitMode(mode) {
    document.querySelector(`input[name="split"][value="${mode}"]`).checked = true;
  }

  function currentReviews() {
    const text = els.reviews.value.replace(/\r\n?/g, "\n");
    const parts = splitMode() === "blocks" ? text.split(/\n[ \t]*\n/) : text.split("\n");
    return parts.map((part) => part.trim()).filter((part) => part.length > 0);
  }

  function updateCount() {
    const n = currentReviews().length;
    els.count.textContent = `${n} review${n === 1 ? "" : "s"}`;
  }

  // CSV (RFC 4180: quoted fields may hold the delimiter, quotes ("") and line breaks)
  function parseDelimited(text, delimiter) {
    const rows = [];
    let row = [], field = "", quoted = false, i = 0;
    if (text.charCodeAt(0) === 0xfeff) i = 1;  // a byte-order mark
    for (; i < text.length; i++) {
      const c = text[i];
      if (quoted) {
        if (c === '"') {
          if (text[i + 1] === '"') { field += '"'; i++; } else { quoted = false; }
        } else {
          field += c;
        }
      } else if (c === '"' && field === "") {
        quoted = true;
      } else if (c === delimiter) {
        row.push(field); field = "";
      } else if (c === "\n" || c === "\r") {
        if (c === "\r" && text[i + 1] === "\n") i++;
        row.push(field); rows.push(row); row = []; field = "";
      } else {
        field += c;
      }
    }
    if (quoted) throw new Error("a quoted field is not closed");
    if (field !== "" || row.length > 0) { row.push(field); rows.push(row); }
    return rows.filter((r) => r.some((cell) => cell.trim() !== ""));
  }

  function groupReviews(records) {  // [{entity, text}] -> [{id, reviews}] in order of appearance
    const sets = new Map();
    for (const { entity, text } of records) {
      if (typeof text !== "string" || !text.trim()) continue;
      if (!sets.has(entity)) sets.set(entity, []);
      sets.get(entity).push(text.trim());
    }
    return [...sets].map(([id, reviews]) => ({ id, reviews }));
  }

  function setsFromTable(text, delimiter, name) {
    const rows = parseDelimited(text, delimiter);
    if (rows.length < 2) throw new Error(`${name}: no rows below the header`);
    const header = rows[0].map((h) => h.trim().toLowerCase());
    const textColumn = header.indexOf("text");
    if (textColumn < 0) {
      throw new Error(`${name}: no "text" column (columns: ${header.join(", ")})`);
    }
    const entityColumn = header.indexOf("entity_id");
    return groupReviews(rows.slice(1).map((r) => ({
      entity: entityColumn >= 0 ? (r[entityColumn] || "").trim() || "reviews" : "reviews",
      text: r[textColumn] || "",
    })));
  }

  function setsFromJson(text, name) {
    let values;
    const trimmed = text.trim();
    if (trimmed.startsWith("[")) {
      values = JSON.parse(trimmed);  // one JSON array of records or strings
    } else {
      values = [];
      trimmed.split(/\r?\n/).forEach((line, i) => {
        if (!line.trim()) return;
        try {
          values.push(JSON.parse(line));
        } catch (err) {
          throw new Error(`${name}, line ${i + 1}: not JSON (${err.message})`);
        }
      });
    }
    const sets = [], single = [];
    values.forEach((value, i) => {
      const id = value && (value.entity_id || value.id);
      if (typeof value === "string") {
        single.push({ entity: "reviews", text: value });
      } else if (value && Array.isArray(value.reviews)) {
        sets.push({ id: id || `set ${i + 1}`,
                    reviews: value.reviews.filter((r) => typeof r === "string" && r.trim())
                                          .map((r) => r.trim()) });
      } else if (value && typeof value.text === "string") {
        single.push({ entity: id || "reviews", text: value.text });
      } else {
        throw new Error(`${name}, record ${i + 1}: no "text" or "reviews" field`);
      }
    });
    return [...sets, ...groupReviews(single)].filter((s) => s.reviews.length > 0);
  }

  function showSet(index) {
    const set = loadedSets[index];
    if (!set) return;
    const multiline = set.reviews.some((r) => r.includes("\n"));
    setSplitMode(multiline ? "blocks" : "lines");
    els.reviews.value = set.reviews.join(multiline ? "\n\n" : "\n");
    updateCount();
  }

  async function loadFile(file) {
    const text = await file.text();
    const name = file.name;
    const lower = name.toLowerCase();
    let sets;
    if (lower.endsWith(".csv")) sets = setsFromTable(text, ",", name);
    else if (lower.endsWith(".tsv")) sets = setsFromTable(text, "\t", name);
    else if (/\.(jsonl|ndjson|json)$/.test(lower)) sets = setsFromJson(text, name);
    else sets = [{ id: name, reviews: [text] }];  // plain text: the textarea's rules apply
    if (!sets.length) throw new Error(`${name}: no reviews found`);
    loadedSets = sets;
    els.setSelect.replaceChildren(...sets.map((s, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = `${s.id} (${s.reviews.length} review${s.reviews.length === 1 ? "" : "s"})`;
      return option;
    }));
    els.setChoice.hidden = sets.length < 2;
    if (lower.endsWith(".txt")) {
      els.reviews.value = text;
      updateCount();
    } else {
      showSet(0);
    }
    const total = sets.reduce((n, s) => n + s.reviews.length, 0);
    say(`${name}: ${total} review${total === 1 ? "" : "s"}` +
        (sets.length > 1 ? ` in ${sets.length} sets; pick one above` : ""));
  }

  // ---- talking to the service --------------------------------------------------------------

  function say(text, isError = false) {
    els.message.textContent = text;
    els.message.classList.toggle("error", isError);
  }

  function describeError(body, status, reviews) {
    const error = body && body.error;
    if (!error) return `the service answered ${status}`;
    let text = error.message;
    const match = /^reviews\[(\d+)\]/.exec(error.field || "");
    if (match && reviews[Number(match[1])] !== undefined) {
      const review = reviews[Number(match[1])];
      text += ` (review ${Number(match[1]) + 1}: "${review.slice(0, 60)}${review.length > 60 ? "…" : ""}")`;
    }
    return `Error ${status}: ${text}`;
  }

  function requestBody(reviews) {  // the reviews and the chosen slice and length
    const body = { reviews, slice: els.slice.value };
    const words = parseInt(els.maxWords.value, 10);
    if (Number.isFinite(words) && words > 0) body.max_words = words;
    return body;
  }

  async function summarize() {
    const reviews = currentReviews();
    if (!reviews.length) {
      say("Paste some reviews first (or load a file).", true);
      els.reviews.focus();
      return;
    }
    els.button.disabled = true;
    els.button.textContent = "Summarizing…";
    say(`Summarizing ${reviews.length} review${reviews.length === 1 ? "" : "s"}…`);
    try {
      const response = await fetch("/v1/summarize", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(requestBody(reviews)),
      });
      let body = null;
      try { body = await response.json(); } catch (err) { body = null; }
      if (!response.ok) {
        say(describeError(body, response.status, reviews), true);
        return;
      }
      last = { reviews, response: body };
      pinned = null;
      render();
      const warnings = body.warnings || [];  // unreadable input, outside the model's domain
      say(warnings.length ? `Warning: ${warnings.join("; ")}` : "", warnings.length > 0);
    } catch (err) {
      say(`Could not reach the service: ${err.message}`, true);
    } finally {
      els.button.disabled = false;
      els.button.textContent = "Summarize";
    }
  }

  // ---- showing the summary and its evidence ------------------------------------------------

  function level(sentence, threshold) {
    if (sentence.score >= threshold) return "high";
    return sentence.score >= threshold / 2 ? "mid" : "low";
  }

  function render() {
    const { summary, support } = last.response;
    const chars = Array.from(summary);  // offsets count code points, as Python does
    const parts = [];
    let at = 0;
    support.sentences.forEach((sentence, i) => {
      if (sentence.start > at) parts.push(document.createTextNode(chars.slice(at, sentence.start).join("")));
      const span = document.createElement("span");
      span.className = `sent level-${sentence.contradicted ? "low"
        : level(sentence, support.threshold)}`;
      span.textContent = chars.slice(sentence.start, sentence.end).join("");
      span.dataset.index = String(i);
      span.tabIndex = 0;
      span.setAttribute("role", "button");
      span.setAttribute("aria-label", `${sentence.text} (support ${sentence.score.toFixed(2)})`);
      parts.push(span);
      at = sentence.end;
    });
    if (at < chars.length) parts.push(document.createTextNode(chars.slice(at).join("")));
    if (!summary.trim()) parts.push(document.createTextNode("(the model produced an empty summary)"));
    els.summary.replaceChildren(...parts);

    const n = support.sentences.length;
    const supported = support.sentences.filter((s) => s.supported).length;
    els.share.textContent = `${supported} of ${n} sentence${n === 1 ? "" : "s"} supported ` +
      `(${Math.round(support.supported_share * 100)}%)`;
    els.share.className = "share " + (support.supported_share >= 0.8 ? "good"
      : support.supported_share >= 0.5 ? "fair" : "poor");
    els.result.hidden = false;
    showEvidence(null);
  }

  function fold(word) {  // the plural folding of denoisesum.inference.support.fold
    if (word.length > 4 && word.endsWith("ies")) return word.slice(0, -3) + "y";
    if (word.length > 4 && /(sses|shes|ches|xes|zes)$/.test(word)) return word.slice(0, -2);
    if (word.length > 3 && word.endsWith("s") && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
    return word;
  }

  function markWords(text, words) {  // the review's text with the matched words in <mark>
    const container = document.createElement("div");
    container.className = "review-text";
    const escaped = words.map(fold).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .map((w) => (w.endsWith("y") ? `${w.slice(0, -1)}(?:y|ies)` : `${w}(?:s|es)?`));
    if (!escaped.length) { container.textContent = text; return container; }
    const pattern = new RegExp(`(^|[^\\p{L}\\p{N}])(${escaped.join("|")})(?![\\p{L}\\p{N}])`, "giu");
    let at = 0, match;
    while ((match = pattern.exec(text)) !== null) {
      const start = match.index + match[1].length;
      container.append(document.createTextNode(text.slice(at, start)));
      const mark = document.createElement("mark");
      mark.textContent = match[2];
      container.append(mark);
      at = start + match[2].length;
      pattern.lastIndex = at;
    }
    container.append(document.createTextNode(text.slice(at)));
    return container;
  }

  function showEvidence(index) {
    document.querySelectorAll(".summary .sent").forEach((span) => {
      span.classList.toggle("active", span.dataset.index === String(index));
      span.classList.toggle("pinned", span.dataset.index === String(pinned));
    });
    if (index === null || !last) {
      const hint = document.createElement("p");
      hint.className = "muted";
      hint.textContent = "Hover over or click a sentence of the summary.";
      els.evidence.replaceChildren(hint);
      return;
    }
    const { support } = last.response;
    const sentence = support.sentences[index];
    const title = document.createElement("h3");
    title.textContent = `“${sentence.text}”: ${sentence.contradicted ? "contradicted by the reviews"
      : sentence.supported ? "supported" : "not supported"} ` +
      `(score ${sentence.score.toFixed(2)}, threshold ${support.threshold.toFixed(2)})`;
    const parts = [title];
    if (sentence.missing.length) {
      const missing = document.createElement("p");
      missing.className = "missing";
      missing.textContent = `In no review: ${sentence.missing.join(", ")}`;
      parts.push(missing);
    }
    if (sentence.reviews.length) {
      const list = document.createElement("ol");
      for (const review of sentence.reviews) {
        const item = document.createElement("li");
        item.className = "support-review";
        const head = document.createElement("div");
        head.className = "review-head";
        head.textContent = `Review ${review.index + 1} · score ${review.score.toFixed(2)} · ` +
          `shares: ${review.matched.join(", ")}`;
        item.append(head, markWords(last.reviews[review.index] || "", review.matched));
        list.append(item);
      }
      parts.push(list);
    } else if (!sentence.missing.length && sentence.score >= 1) {
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = "No content words: nothing to check.";
      parts.push(note);
    } else {
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = "No review shares enough of this sentence's words.";
      parts.push(note);
    }
    els.evidence.replaceChildren(...parts);
  }

  function sentenceOf(target) {
    const span = target.closest && target.closest(".summary .sent");
    return span ? Number(span.dataset.index) : null;
  }

  // ---- copy and download -------------------------------------------------------------------

  async function copySummary() {
    if (!last) return;
    const text = last.response.summary;
    try {
      await navigator.clipboard.writeText(text);
    } catch (err) {  // no clipboard API (plain http off localhost): the old way
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    say("Summary copied.");
  }

  function download(name, type, content) {
    const url = URL.createObjectURL(new Blob([content], { type }));
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // ---- wiring ------------------------------------------------------------------------------

  els.reviews.addEventListener("input", updateCount);
  document.querySelectorAll('input[name="split"]').forEach((r) => r.addEventListener("change", updateCount));
  els.reviews.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) summarize();
  });
  els.button.addEventListener("click", summarize);
  els.file.addEventListener("change", async () => {
    const file = els.file.files[0];
    if (!file) return;
    try {
      await loadFile(file);
    } catch (err) {
      say(`Could not read the file: ${err.message}`, true);
    }
    els.file.value = "";  // the same file can be loaded again
  });
  els.setSelect.addEventListener("change", () => showSet(Number(els.setSelect.value)));

  els.summary.addEventListener("mouseover", (event) => {
    const index = sentenceOf(event.target);
    if (index !== null) showEvidence(index);
  });
  els.summary.addEventListener("mouseleave", () => showEvidence(pinned));
  els.summary.addEventListener("focusin", (event) => {
    const index = sentenceOf(event.target);
    if (index !== null) showEvidence(index);
  });
  els.summary.addEventListener("click", (event) => {
    const index = sentenceOf(event.target);
    if (index === null) return;
    pinned = pinned === index ? null : index;
    showEvidence(pinned === null ? index : pinned);
  });
  els.summary.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const index = sentenceOf(event.target);
    if (index === null) return;
    event.preventDefault();
    pinned = pinned === index ? null : index;
    showEvidence(index);
  });

  els.copy.addEventListener("click", copySummary);
  els.downloadText.addEventListener("click", () => {
    if (last) download("summary.txt", "text/plain", last.response.summary + "\n");
  });
  els.downloadJson.addEventListener("click", () => {
    if (!last) return;
    const record = { ...last.response, reviews: last.reviews };
    download("summary.json", "application/json", JSON.stringify(record, null, 2) + "\n");
  });

  fetch("/v1/models").then((r) => (r.ok ? r.json() : null)).then((body) => {
    if (body && body.models && body.models.length) els.model.textContent = `model: ${body.models[0].id}`;
  }).catch(() => {});
  updateCount();
})();
