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
    method: $("method"),
    summary: $("summary"), share: $("share"), evidence: $("evidence"), model: $("model-name"),
    copy: $("copy"), downloadText: $("download-text"), downloadJson: $("download-json"),
    columns: $("columns"), columnsFile: $("columns-file"), colText: $("col-text"),
    colEntity: $("col-entity"), colRating: $("col-rating"), starsOn: $("stars-on"),
    starsHint: $("stars-hint"), starList: $("star-list"),
  };
  let loadedTable = null;  // the file read, as a table whose columns the page maps
  let loadedSets = [];  // review sets read from a file: [{id, reviews, ratings}]
  let starRows = [];  // [{text, value}]: each review of the text box and its stars box's text
  let last = null;  // {reviews, ratings, response} of the summary shown
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
    const rated = els.starsOn.checked ? starRows.filter((row) => row.value.trim()).length : 0;
    els.count.textContent = `${n} review${n === 1 ? "" : "s"}` +
      (els.starsOn.checked ? `, ${rated} with stars` : "");
  }

  // ---- stars per review -----------------------------------------------------------------
  // One row per review under the text box, kept beside its review as the text is edited: by
  // position while the number of reviews stays the same (a review being corrected), by text
  // when reviews come or go.

  function syncStars() {
    const reviews = currentReviews();
    const old = starRows;
    if (reviews.length === old.length) {
      starRows = reviews.map((text, i) => ({ text, value: old[i].value }));
    } else {
      const used = new Set();
      starRows = reviews.map((text) => {
        const j = old.findIndex((row, k) => !used.has(k) && row.text === text);
        if (j < 0) return { text, value: "" };
        used.add(j);
        return { text, value: old[j].value };
      });
    }
    renderStars();
  }

  function starProblem(value) {  // null when the box is empty or holds 1 to 5, else why not
    const text = value.trim();
    if (!text) return null;
    const stars = Number(text.replace(",", "."));
    if (!Number.isFinite(stars)) return `"${text}" is not a number`;
    if (stars < 1 || stars > 5) return `${text} is not from 1 to 5`;
    return null;
  }

  function markStar(input, value) {
    const bad = starProblem(value) !== null;
    input.classList.toggle("invalid", bad);
    input.setAttribute("aria-invalid", String(bad));
  }

  function renderStars() {
    const on = els.starsOn.checked;
    els.starList.hidden = !on || starRows.length === 0;
    els.starsHint.hidden = !on;
    els.starList.replaceChildren(...starRows.map((row, i) => {
      const item = document.createElement("li");
      item.className = "star-row";
      const input = document.createElement("input");
      input.type = "text";
      input.inputMode = "decimal";
      input.className = "star";
      input.placeholder = "–";
      input.value = row.value;
      input.setAttribute("aria-label", `Stars for review ${i + 1}`);
      markStar(input, row.value);
      input.addEventListener("input", () => {
        row.value = input.value;
        markStar(input, input.value);
        updateCount();
      });
      const text = document.createElement("span");
      text.className = "star-text";
      text.textContent = row.text;
      text.title = row.text;
      item.append(input, document.createTextNode(" ★ "), text);
      return item;
    }));
    updateCount();
  }

  function currentRatings() {  // each review's stars (null where none), or null: none given
    if (!els.starsOn.checked) return null;
    const ratings = starRows.map((row, i) => {
      const problem = starProblem(row.value);
      if (problem) {
        const input = els.starList.querySelectorAll("input.star")[i];
        if (input) input.focus();
        throw new Error(`Review ${i + 1}'s stars: ${problem} (give 1 to 5, or leave it empty)`);
      }
      return row.value.trim() ? Number(row.value.trim().replace(",", ".")) : null;
    });
    return ratings.some((r) => r !== null) ? ratings : null;
  }

  // ---- reading files (in the browser: they are never uploaded) --------------------------

  // CSV (RFC 4180: quoted fields may hold the delimiter, quotes ("") and line breaks); each row
  // with the line it starts on
  function parseDelimited(text, delimiter, name) {
    const rows = [];
    let row = [], field = "", quoted = false, i = 0, line = 1, rowLine = 1, quoteLine = 1;
    if (text.charCodeAt(0) === 0xfeff) i = 1;  // a byte-order mark
    for (; i < text.length; i++) {
      const c = text[i];
      if (quoted) {
        if (c === '"') {
          if (text[i + 1] === '"') { field += '"'; i++; } else { quoted = false; }
        } else {
          if (c === "\n" || (c === "\r" && text[i + 1] !== "\n")) line++;
          field += c;
        }
      } else if (c === '"' && field === "") {
        quoted = true;
        quoteLine = line;
      } else if (c === delimiter) {
        row.push(field); field = "";
      } else if (c === "\n" || c === "\r") {
        if (c === "\r" && text[i + 1] === "\n") i++;
        row.push(field); rows.push({ cells: row, line: rowLine }); row = []; field = "";
        line++; rowLine = line;
      } else {
        field += c;
      }
    }
    if (quoted) throw new Error(`${name}, line ${quoteLine}: a quoted field is not closed`);
    if (field !== "" || row.length > 0) { row.push(field); rows.push({ cells: row, line: rowLine }); }
    return rows.filter((r) => r.cells.some((cell) => cell.trim() !== ""));
  }

  // A file as a table: {name, columns, rows: [{where, cells: {column: value}}], sets}, where
  // sets are the entities a JSON file gives whole ({"reviews": [...], "ratings": [...]}).
  function tableFromDelimited(text, delimiter, name) {
    const rows = parseDelimited(text, delimiter, name);
    if (!rows.length) throw new Error(`${name}: the file is empty`);
    const columns = rows[0].cells.map((h, i) => h.trim() || `column ${i + 1}`);
    if (rows.length < 2) throw new Error(`${name}: no rows below the header (${columns.join(", ")})`);
    const seen = new Set();
    for (const column of columns) {
      if (seen.has(column)) throw new Error(`${name}, line ${rows[0].line}: two columns named "${column}"`);
      seen.add(column);
    }
    const sep = delimiter === "\t" ? "tab" : `"${delimiter}"`;
    return {
      name, columns, sets: [],
      rows: rows.slice(1).map(({ cells, line }) => {
        if (cells.length > columns.length) {
          throw new Error(`${name}, line ${line}: ${cells.length} fields where the header has ` +
                          `${columns.length} (a text holding a ${sep} outside quotes?)`);
        }
        return { where: `line ${line}`, cells: Object.fromEntries(cells.map((c, i) => [columns[i], c])) };
      }),
    };
  }

  function checkSetRatings(value, where, name, count) {
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value) || value.length !== count) {
      throw new Error(`${name}, ${where}: "ratings" must be a list of ${count} values ` +
                      "(one per review, null where unknown)");
    }
    return value.map((r, i) => {
      if (r === null) return null;
      if (typeof r !== "number" || r < 1 || r > 5) {
        throw new Error(`${name}, ${where}: "ratings"[${i}] is ${JSON.stringify(r)}, ` +
                        "not stars from 1 to 5 (or null)");
      }
      return r;
    });
  }

  function tableFromJson(text, name) {
    let values;
    const trimmed = text.trim();
    const isArray = trimmed.startsWith("[");
    if (!trimmed) throw new Error(`${name}: the file is empty`);
    if (isArray) {
      try {
        values = JSON.parse(trimmed);  // one JSON array of records or strings
      } catch (err) {
        throw new Error(`${name}: not JSON (${err.message})`);
      }
    } else {
      values = [];
      trimmed.split(/\r?\n/).forEach((line, i) => {
        if (!line.trim()) return;
        try {
          values.push([JSON.parse(line), `line ${i + 1}`]);
        } catch (err) {
          throw new Error(`${name}, line ${i + 1}: not JSON (${err.message})`);
        }
      });
    }
    if (isArray) values = values.map((v, i) => [v, `record ${i + 1}`]);
    const sets = [], rows = [], columns = [];
    for (const [value, where] of values) {
      if (typeof value === "string") {
        rows.push({ where, cells: { text: value } });
        if (!columns.includes("text")) columns.push("text");
      } else if (value && typeof value === "object" && Array.isArray(value.reviews)) {
        const id = value.entity_id || value.id || `set ${sets.length + 1}`;
        const ratings = checkSetRatings(value.ratings, where, name, value.reviews.length);
        const kept = [], stars = [];
        value.reviews.forEach((r, i) => {
          if (typeof r !== "string" || !r.trim()) return;
          kept.push(r.trim());
          stars.push(ratings ? ratings[i] : null);
        });
        if (kept.length) sets.push({ id: String(id), reviews: kept, ratings: stars });
      } else if (value && typeof value === "object" && !Array.isArray(value)) {
        rows.push({ where, cells: value });
        for (const key of Object.keys(value)) if (!columns.includes(key)) columns.push(key);
      } else {
        throw new Error(`${name}, ${where}: not a record ({"text": ...}), a review set ` +
                        '({"reviews": [...]}) or a string');
      }
    }
    return { name, columns, rows, sets };
  }

  // the columns' usual names (lower case, without "_", "-" or spaces), most likely first
  const GUESSES = {
    text: ["text", "reviewtext", "review", "body", "reviewbody", "content", "reviewcontent",
           "comment", "comments", "description"],
    entity: ["entityid", "businessid", "productid", "parentasin", "asin", "hotelid", "hotel",
             "hotelname", "hotelurl", "restaurantid", "restaurant", "placeid", "gmapid",
             "business", "businessname", "product", "productname", "itemid", "item", "appid",
             "entity", "name"],
    rating: ["rating", "stars", "star", "reviewrating", "reviewstars", "overall",
             "ratingoverall", "score", "reviewscore", "rate"],
  };

  function guess(columns, role, taken) {
    const plain = (c) => c.toLowerCase().replace(/[^a-z0-9]/g, "");
    for (const wanted of GUESSES[role]) {
      const found = columns.find((c) => !taken.includes(c) && plain(c) === wanted);
      if (found !== undefined) return found;
    }
    return "";
  }

  function fillSelect(select, columns, chosen, none) {
    const options = [["", none], ...columns.map((c) => [c, c])].map(([value, label]) => {
      const option = document.createElement("option");
      option.value = value;
      option.textContent = label;
      return option;
    });
    select.replaceChildren(...options);
    select.value = chosen;
  }

  function showColumns(table) {
    const { columns } = table;
    const text = guess(columns, "text", []);
    const entity = guess(columns, "entity", [text]);
    const rating = guess(columns, "rating", [text, entity]);
    fillSelect(els.colText, columns, text, "choose…");
    fillSelect(els.colEntity, columns, entity, "none: one set");
    fillSelect(els.colRating, columns, rating, "none");
    els.columnsFile.textContent = table.name;
    els.columns.hidden = columns.length === 0;
  }

  function starsOf(raw) {  // a cell's stars: a number, null (empty, not a number), or "bad"
    if (raw === null || raw === undefined) return null;
    if (typeof raw === "number") return raw >= 1 && raw <= 5 ? raw : "bad";
    const text = String(raw).trim().replace(",", ".");
    if (!text) return null;
    const stars = Number(text);
    if (!Number.isFinite(stars)) return null;
    return stars >= 1 && stars <= 5 ? stars : "bad";
  }

  function excerpt(value) {
    const text = String(value);
    return text.length > 40 ? `${text.slice(0, 40)}…` : text;
  }

  // The table's rows grouped by the chosen columns: [{id, reviews, ratings}] and what was left
  function setsFromTable(table) {
    const { name, rows } = table;
    const text = els.colText.value, entity = els.colEntity.value, rating = els.colRating.value;
    if (!table.rows.length) {
      if (!table.sets.length) throw new Error(`${name}: no reviews found`);
      return { sets: table.sets, skipped: 0, unrated: [] };
    }
    if (!text) {
      throw new Error(`${name}: which column holds the review text? Choose it above ` +
                      `(columns: ${table.columns.join(", ")})`);
    }
    if (entity === text || rating === text) {
      throw new Error(`${name}: column "${text}" cannot be both the text and the ` +
                      `${entity === text ? "entity" : "stars"}`);
    }
    if (rating && rating === entity) {
      throw new Error(`${name}: column "${rating}" cannot be both the entity and the stars`);
    }
    const groups = new Map();
    let skipped = 0, rated = 0, firstUnrated = null;
    const unrated = [];
    for (const row of rows) {
      const review = row.cells[text];
      if (review !== null && review !== undefined && typeof review !== "string") {
        throw new Error(`${name}, ${row.where}, column "${text}": not a text ` +
                        `(${excerpt(JSON.stringify(review))})`);
      }
      if (!review || !review.trim()) { skipped++; continue; }
      let stars = null;
      if (rating) {
        stars = starsOf(row.cells[rating]);
        if (stars === "bad") {
          throw new Error(`${name}, ${row.where}, column "${rating}": ` +
                          `${excerpt(row.cells[rating])} is not stars from 1 to 5`);
        }
        if (stars === null) {
          unrated.push(row.where);
          if (firstUnrated === null) firstUnrated = row;
        } else {
          rated++;
        }
      }
      const id = entity ? String(row.cells[entity] ?? "").trim() || "(no id)" : "reviews";
      if (!groups.has(id)) groups.set(id, { id, reviews: [], ratings: [] });
      groups.get(id).reviews.push(review.trim());
      groups.get(id).ratings.push(stars);
    }
    if (rating && rated === 0 && firstUnrated) {
      const raw = firstUnrated.cells[rating];
      throw new Error(`${name}: column "${rating}" holds no stars (${firstUnrated.where}: ` +
                      `${raw === undefined || raw === null || raw === "" ? "empty"
                        : `"${excerpt(raw)}"`}); choose the stars column, or none`);
    }
    const sets = [...table.sets, ...groups.values()];
    if (!sets.length) throw new Error(`${name}: no review text in column "${text}"`);
    return { sets, skipped, unrated };
  }

  function showSet(index) {
    const set = loadedSets[index];
    if (!set) return;
    const multiline = set.reviews.some((r) => r.includes("\n"));
    setSplitMode(multiline ? "blocks" : "lines");
    els.reviews.value = set.reviews.join(multiline ? "\n\n" : "\n");
    const ratings = set.ratings || set.reviews.map(() => null);
    starRows = set.reviews.map((text, i) => ({ text, value: ratings[i] === null ? "" : String(ratings[i]) }));
    renderStars();
  }

  function clearLoaded() {
    loadedSets = [];
    els.setChoice.hidden = true;
    els.reviews.value = "";
    starRows = [];
    renderStars();
  }

  function applyTable() {  // the loaded table's sets under the chosen columns, on the page
    const table = loadedTable;
    let result;
    try {
      result = setsFromTable(table);
    } catch (err) {
      clearLoaded();
      say(err.message, true);
      return;
    }
    const { sets, skipped, unrated } = result;
    loadedSets = sets;
    els.setSelect.replaceChildren(...sets.map((s, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = `${s.id} (${s.reviews.length} review${s.reviews.length === 1 ? "" : "s"})`;
      return option;
    }));
    els.setChoice.hidden = sets.length < 2;
    els.starsOn.checked = sets.some((s) => s.ratings && s.ratings.some((r) => r !== null));
    showSet(0);
    const total = sets.reduce((n, s) => n + s.reviews.length, 0);
    const notes = [];
    if (skipped) notes.push(`${skipped} row${skipped === 1 ? "" : "s"} without text skipped`);
    if (unrated.length) {
      const shown = unrated.slice(0, 5).join(", ") + (unrated.length > 5 ? ", …" : "");
      notes.push(`${unrated.length} without stars: ${shown}`);
    }
    say(`${table.name}: ${total} review${total === 1 ? "" : "s"}` +
        (sets.length > 1 ? ` in ${sets.length} sets; pick one above` : "") +
        (notes.length ? ` (${notes.join("; ")})` : ""));
  }

  async function loadFile(file) {
    const text = await file.text();
    const name = file.name;
    const lower = name.toLowerCase();
    let table;
    if (lower.endsWith(".csv")) table = tableFromDelimited(text, ",", name);
    else if (lower.endsWith(".tsv")) table = tableFromDelimited(text, "\t", name);
    else if (/\.(jsonl|ndjson|json)$/.test(lower)) table = tableFromJson(text, name);
    else {  // plain text: the text box's rules apply
      if (!text.trim()) throw new Error(`${name}: the file is empty`);
      loadedTable = null;
      els.columns.hidden = true;
      clearLoaded();
      els.reviews.value = text;
      syncStars();
      say(`${name}: ${currentReviews().length} reviews`);
      return;
    }
    loadedTable = table;
    showColumns(table);
    applyTable();
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

  function requestBody(reviews, ratings) {  // the reviews, their stars, the slice and length
    const body = { reviews, slice: els.slice.value };
    if (els.method.value) body.method = els.method.value;
    if (ratings) body.ratings = ratings;
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
    let ratings;
    try {
      ratings = currentRatings();
    } catch (err) {
      say(err.message, true);
      return;
    }
    els.button.disabled = true;
    els.button.textContent = "Summarizing…";
    say(`Summarizing ${reviews.length} review${reviews.length === 1 ? "" : "s"}…`);
    try {
      const response = await fetch("/v1/summarize", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(requestBody(reviews, ratings)),
      });
      let body = null;
      try { body = await response.json(); } catch (err) { body = null; }
      if (!response.ok) {
        say(describeError(body, response.status, reviews), true);
        return;
      }
      last = { reviews, ratings, response: body };
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

  // the attribution of each support sentence (the opinions method's answer), or null: the
  // one whose sentence it is, its first letter's case and the method's framing aside
  function attributionOf(sentence) {
    const said = last.response.attribution || [];
    const text = sentence.text.toLowerCase();
    return said.find((a) => text.includes(a.text.slice(1).toLowerCase())) || null;
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
      const said = attributionOf(sentence);
      if (said) {  // shown after the sentence by the stylesheet: never part of the copied text
        span.dataset.share = `${said.count} of ${said.total}`;
        span.setAttribute("aria-label", `${sentence.text} (${said.count} of ${said.total} ` +
          `reviews; support ${sentence.score.toFixed(2)})`);
      }
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
    const said = attributionOf(sentence);
    if (said) {
      const holders = document.createElement("p");
      holders.className = "holders";
      holders.textContent = `Said by ${said.count} of ${said.total} reviews ` +
        `(${said.polarity < 0 ? "a complaint" : said.polarity > 0 ? "praise" : "a statement"} ` +
        `about the ${said.aspect}): review${said.reviews.length === 1 ? "" : "s"} ` +
        said.reviews.map((i) => i + 1).join(", ");
      parts.push(holders);
    }
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
        const stars = last.ratings && last.ratings[review.index];
        head.textContent = `Review ${review.index + 1}` +
          (stars !== null && stars !== undefined ? ` · ${stars}★` : "") +
          ` · score ${review.score.toFixed(2)} · ` +
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

  els.reviews.addEventListener("input", syncStars);
  document.querySelectorAll('input[name="split"]').forEach((r) => r.addEventListener("change", syncStars));
  els.starsOn.addEventListener("change", renderStars);
  for (const select of [els.colText, els.colEntity, els.colRating]) {
    select.addEventListener("change", () => { if (loadedTable) applyTable(); });
  }
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
      loadedTable = null;
      loadedSets = [];
      els.columns.hidden = true;
      els.setChoice.hidden = true;
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
    if (last.ratings) record.ratings = last.ratings;
    download("summary.json", "application/json", JSON.stringify(record, null, 2) + "\n");
  });

  fetch("/v1/models").then((r) => (r.ok ? r.json() : null)).then((body) => {
    if (body && body.models && body.models.length) els.model.textContent = `model: ${body.models[0].id}`;
  }).catch(() => {});
  syncStars();
})();
