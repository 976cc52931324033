"""The pages a person opens from disk, self-contained (inline CSS and JavaScript, no
external URL): ``report.html`` of one decode, and ``comparison_page``, the side-by-side
page of two decodes (``acvi_tf.inference.compare``).

``report.html``: one self-contained page (inline CSS and JavaScript, no external URL)
that shows a decode: the run's metrics, every example with its scores (sortable,
filterable), and for the examples that carry per-token detail the source shaded by the
attention of the output token under the pointer (See et al.'s ``attn_vis`` idea), the
output shaded by p_gen, the reference, and what the context mechanism defines of its
posterior at decode time (``ContextLayer.report_posterior``), each chart titled by the
mechanism's own label: the scale per source position, the scale per decoder step (a row
under the output) and the KL per decoder step; a mechanism without them says why.

A host builds one ``example_row`` per example (small: scores, length, copy rate, OOVs, the
output text) and an ``example_detail`` for at most ``DEFAULT_DETAIL`` of them (the
attention matrices, rounded to 3 decimals and stored sparse), then calls ``write_report``.

The page's DOM is stable for tests: rows ``#examples tbody tr.example`` carry
``data-index``, ``data-score``, ``data-length``, ``data-copy``, ``data-oovs`` and
``data-detail``; source tokens ``#source .src-tok`` carry ``data-index`` and
``data-weight``, the ``TOP_K`` largest weights of the selected step get the class ``top``;
output tokens ``#output .out-tok`` carry ``data-step`` and ``data-pgen``, the selected one
has the class ``selected``. The range filters ``#filters .range`` carry ``data-key``
(``score``, ``len``, ``copy``, ``oov``; those no row has are hidden), ``#score-column`` picks
the score the score range reads, and ``#pgen-legend`` shows only with a detail that has
p_gen. A detail with ``frames`` (``add_frames``: the captioner's
thumbnails) shows each source token as ``.src-tok.frame``, its image above its label.
"""

import base64
import html
import io
import json
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

from acvi_tf import files
from acvi_tf.metrics import copying

# Examples whose per-token detail a report embeds unless told otherwise.
DEFAULT_DETAIL = 200
# Source tokens marked as the selected output token's largest attention weights.
TOP_K = 3
# Decimals kept of the embedded weights (attention, p_gen, sigma, KL).
DECIMALS = 3
# The hosts' note on the posterior's charts.
POSTERIOR_NOTE = (
    "Posterior scale and KL per step: what the context mechanism defines at decode time, "
    "each chart titled with the quantity it shows; a mechanism without them says why."
)
# The filters' tooltip: how a range filter treats a row without a value in its column.
FILTER_RULE = (
    "A range filter with a bound set hides the rows without a value in its column; with "
    "both bounds empty it hides none. The score range applies to the score column chosen."
)
# JPEG quality of the embedded frame thumbnails.
THUMBNAIL_QUALITY = 70


def copy_rate(source: Sequence[str], output: Sequence[str]) -> Optional[float]:
    """The share of output tokens that occur in the source (None for an empty output)."""
    if not output:
        return None
    return 1.0 - copying.novel_word_rate([source], [output])


def example_row(
    index: int,
    output: Sequence[str],
    scores: Dict[str, float],
    source: Optional[Sequence[str]] = None,
    in_vocab: Optional[Callable[[str], bool]] = None,
    name: Optional[str] = None,
) -> Dict[str, Any]:
    """One example's line of the report's list.

    Args:
      index: the example's number in the decode (its file number).
      output: the generated tokens.
      scores: the example's scores by display name; the first is the list's score.
      source: the source tokens, for the copy rate (None: not shown).
      in_vocab: ``word -> bool``, for the OOV count (None: not shown).
      name: the example's own name (a clip), shown with its number.

    Returns:
      A JSON-ready dict.
    """
    return dict(
        i=int(index),
        s={name: _rounded(v) for name, v in scores.items()},
        len=len(output),
        copy=_rounded(copy_rate(source, output)) if source is not None else None,
        oov=copying.oov_count(source, output, in_vocab)
        if source is not None and in_vocab
        else None,
        text=" ".join(output),
        name=name,
    )


def example_detail(
    source: Sequence[str],
    output: Sequence[str],
    reference: str,
    attn: Optional[np.ndarray] = None,
    p_gen: Optional[np.ndarray] = None,
    sigma: Optional[np.ndarray] = None,
    kl: Optional[np.ndarray] = None,
    scale: Optional[np.ndarray] = None,
    labels: Optional[Dict[str, str]] = None,
) -> Dict[str, Any]:
    """One example's per-token detail, JSON-ready.

    Args:
      source: the source tokens (N).
      output: the generated tokens (T).
      reference: the reference text.
      attn: [T, N] attention weights, stored as ``sparse_rows``.
      p_gen: [T] generation probabilities (the summarizer).
      sigma: [N] the posterior's scale per source position (latent mechanisms).
      kl: [T] the KL per decoder step.
      scale: [T] the posterior's scale per decoder step.
      labels: what ``sigma``, ``kl`` and ``scale`` are, and a ``note``
        (``ContextLayer.report_labels``).
    """
    detail = dict(source=list(source), output=list(output), reference=reference)
    if attn is not None:
        detail["attn"] = sparse_rows(np.asarray(attn)[: len(output), : len(source)])
    if sigma is not None:
        sigma = np.asarray(sigma)[: len(source)]
    for name, values in (("p_gen", p_gen), ("sigma", sigma), ("kl", kl), ("scale", scale)):
        if values is not None:
            detail[name] = [_rounded(v) for v in np.asarray(values, np.float64).ravel()]
    if labels:
        detail["labels"] = dict(labels)
    return detail


def sparse_rows(matrix: np.ndarray) -> List[List[int]]:
    """Each row of a [T, N] weight matrix as ``[i, w, i, w, ...]``: the positions whose
    weight rounds to a non-zero number of thousandths, and that number."""
    scaled = np.rint(np.asarray(matrix, np.float64) * 10**DECIMALS).astype(np.int64)
    return [[int(x) for i in np.flatnonzero(row) for x in (i, row[i])] for row in scaled]


def image_uri(image: np.ndarray) -> str:
    """A uint8 [H, W, 3] image as a ``data:image/jpeg;base64,...`` URI (quality
    ``THUMBNAIL_QUALITY``), for a page that fetches nothing."""
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image, np.uint8), "RGB").save(
        buffer, "JPEG", quality=THUMBNAIL_QUALITY
    )
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def add_frames(detail: Dict[str, Any], images: Sequence[np.ndarray]) -> Dict[str, Any]:
    """Gives an ``example_detail`` thumbnails of its first source positions: the page then
    shows source token j as ``images[j]`` labelled with the token (the tokens past the
    images, e.g. padding, as text), shaded and outlined like source tokens.

    Args:
      detail: an ``example_detail``.
      images: uint8 [H, W, 3] images, at most one per source token.

    Returns:
      ``detail``, with ``frames``: the images' ``image_uri``.

    Raises:
      ValueError: more images than source tokens.
    """
    if len(images) > len(detail["source"]):
        raise ValueError("%d images for %d source tokens" % (len(images), len(detail["source"])))
    detail["frames"] = [image_uri(image) for image in images]
    return detail


def _rounded(value):
    if value is None or not math.isfinite(float(value)):
        return None
    return round(float(value), DECIMALS)


# Counts of exceptions in the metrics, which the page shows only when some occurred (the
# words ROUGE scored through ASCII stand-ins).
SHOWN_WHEN_NONZERO = ("rouge_stand_ins",)


def write_report(
    path: str,
    title: str,
    metrics: Dict[str, Any],
    rows: Sequence[Dict[str, Any]],
    details: Dict[int, Dict[str, Any]],
    score_label: str,
    notes: Sequence[str] = (),
    elsewhere: str = "",
) -> None:
    """Writes the page atomically.

    Columns and range filters show only the scores, copy rate and OOVs that some row has.

    Args:
      path: the ``report.html`` to write.
      title: the page's heading (the decode folder).
      metrics: the run's metrics (``metrics.json``'s), shown at the top, less the ends of
        confidence intervals (``*_cb``, ``*_ce``: metrics.json and ROUGE_results.txt
        hold them) and the counts of ``SHOWN_WHEN_NONZERO`` that are 0.
      rows: ``example_row`` for every example.
      details: ``example_detail`` by example index, for those that carry detail.
      score_label: what the list's scores are (tool and measure).
      notes: lines shown under the metrics (what is recorded, what is not).
      elsewhere: where an example without detail has its source and reference, shown
        when one is selected (``missing_note``).
    """
    data = dict(
        title=title,
        metrics={
            k: v
            for k, v in metrics.items()
            if isinstance(v, (int, float, str))
            and not k.endswith(("_cb", "_ce"))
            and not (k in SHOWN_WHEN_NONZERO and v == 0)
        },
        rows=list(rows),
        details={str(k): v for k, v in details.items()},
        score_label=score_label,
        notes=list(notes),
        detail_note=detail_note(len(details), len(rows), _first(details)),
        missing_note=missing_note(len(details), _first(details), elsewhere),
        top_k=TOP_K,
    )
    # "<" escaped, so that no text of the data closes the script element
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    page = (
        _PAGE.replace("__TITLE__", _escape(title))
        .replace("__FILTER_RULE__", FILTER_RULE)
        .replace("__DATA__", payload)
    )
    files.atomic_write_text(path, page)


def _first(details):
    """Whether ``details`` are those of the examples numbered from 0."""
    return sorted(details) == list(range(len(details)))


def detail_note(detailed: int, total: int, first: bool) -> str:
    """The page's line on which examples carry their source, reference and per-token detail
    (none when none does: the notes say why)."""
    if not detailed:
        return ""
    return "The source, reference and per-token detail are embedded for %s%d of %d examples%s." % (
        "the first " if first else "",
        detailed,
        total,
        " (--report_examples)" if first else "",
    )


def missing_note(detailed: int, first: bool, elsewhere: str = "") -> str:
    """What the page says of an example without detail: that only its output is embedded,
    which examples carry detail, and ``elsewhere``, where its source and reference are."""
    text = "Only the output is embedded for this example"
    if detailed:
        which = "the first %d examples (--report_examples)" if first else "%d examples"
        text += "; the source, reference and per-token detail are embedded for " + which % detailed
    return text + "." + (" " + elsewhere if elsewhere else "")


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body{font:14px/1.4 sans-serif;margin:12px;color:#222;background:#fff}
h1{font-size:17px;margin:0 0 8px}h2{font-size:15px;margin:12px 0 4px}
table{border-collapse:collapse}td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:left}
#metrics{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:1px 12px}
.metric span{font-family:monospace;float:right}
#examples th{cursor:pointer;user-select:none;background:#f3f3f3}
#examples th[aria-sort=ascending]::after{content:" \\25b2"}
#examples th[aria-sort=descending]::after{content:" \\25bc"}
#examples tr.example{cursor:pointer}#examples tr.chosen{background:#e3eefc}
#examples td.text{max-width:560px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#list{max-height:300px;overflow:auto;border:1px solid #ccc}
#filters input{width:64px}#filters #filter-text{width:160px}
.tokens{line-height:1.9}.tokens span{padding:1px 2px;border-radius:2px}
.src-tok.top{outline:2px solid #b32;font-weight:bold}
.src-tok.frame{display:inline-block;text-align:center;font-size:11px;padding:3px;margin:1px}
.src-tok.frame img{display:block}
.out-tok{cursor:pointer}.out-tok.selected{outline:2px solid #124;font-weight:bold}
.note{color:#555}svg{background:#fafafa;border:1px solid #ddd}
</style></head><body>
<h1 id="title">__TITLE__</h1>
<div id="metrics"></div>
<ul id="notes" class="note"></ul>
<p id="detail-note" class="note"></p>
<h2>Examples</h2>
<div id="filters" title="__FILTER_RULE__">text <input id="filter-text" type="search">
<span class="range" data-key="score">
<select id="score-column" title="the score the range reads"></select>
<input id="score-min" type="number" step="any">
to <input id="score-max" type="number" step="any"></span>
<span class="range" data-key="len">length <input id="len-min" type="number">
to <input id="len-max" type="number"></span>
<span class="range" data-key="copy">copy rate <input id="copy-min" type="number" step="any">
to <input id="copy-max" type="number" step="any"></span>
<span class="range" data-key="oov">OOVs <input id="oov-min" type="number">
to <input id="oov-max" type="number"></span>
<span id="shown-count" class="note"></span></div>
<div id="list"><table id="examples"><thead><tr id="columns"></tr></thead><tbody></tbody>
</table></div>
<section id="detail"><h2 id="detail-title"></h2>
<p id="example-scores"></p>
<p class="note" id="detail-missing"></p>
<h2>Source <span class="note">(shaded by the attention of the selected output token; outlined:
its largest weights)</span></h2><div id="source" class="tokens"></div>
<h2>Output <span class="note">(hover or click a token<span id="pgen-legend">; blue:
generated, p_gen near 1; white: copied, p_gen near 0</span>)</span></h2>
<div id="output" class="tokens"></div>
<div id="scale-box"></div>
<h2>Reference</h2><div id="reference"></div>
<p id="posterior-note" class="note"></p><div id="sigma-box"></div><div id="kl-box"></div>
</section>
<script type="application/json" id="report-data">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("report-data").textContent);
const $ = (id) => document.getElementById(id);
const scoreNames = D.rows.length ? Object.keys(D.rows[0].s) : [];
const given = (key) => D.rows.some((r) => r[key] !== null && r[key] !== undefined);
const COLUMNS = [["i", "#"]].concat(scoreNames.map((n) => ["s:" + n, n]), [["len", "length"]],
  [["copy", "copy rate"], ["oov", "OOVs"]].filter(([key]) => given(key)),
  [["detail", "detail"], ["text", "output"]]);
const num = (v) => (v === null || v === undefined ? "\\u2013" : String(v));
function value(row, key) {
  if (key.startsWith("s:")) return row.s[key.slice(2)];
  if (key === "detail") return D.details[row.i] ? 1 : 0;
  return row[key];
}
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function showMetrics() {
  for (const [k, v] of Object.entries(D.metrics)) {
    const item = el("div", k, "metric"); item.dataset.name = k;
    item.appendChild(el("span", typeof v === "number" ? String(Math.round(v * 1e4) / 1e4) : v));
    $("metrics").appendChild(item);
  }
  for (const n of D.notes.concat(["List score: " + D.score_label])) {
    $("notes").appendChild(el("li", n));
  }
  $("detail-note").textContent = D.detail_note;
}
function buildFilters() {
  for (const n of scoreNames) $("score-column").appendChild(el("option", n));
  const shown = {score: scoreNames.length > 0, len: true, copy: given("copy"), oov: given("oov")};
  for (const span of document.querySelectorAll("#filters .range")) {
    span.hidden = !shown[span.dataset.key];
  }
}
const rowsById = {};
function buildList() {
  const head = $("columns");
  for (const [key, label] of COLUMNS) {
    const th = el("th", label); th.dataset.key = key;
    th.addEventListener("click", () => sortBy(key)); head.appendChild(th);
  }
  const body = document.querySelector("#examples tbody");
  for (const row of D.rows) {
    const tr = el("tr", undefined, "example");
    tr.dataset.index = row.i;
    tr.dataset.score = num(scoreNames.length ? row.s[scoreNames[0]] : null);
    tr.dataset.length = row.len; tr.dataset.copy = num(row.copy); tr.dataset.oovs = num(row.oov);
    tr.dataset.detail = D.details[row.i] ? "1" : "0";
    for (const [key] of COLUMNS) {
      const v = value(row, key);
      const shown = key === "detail" ? (v ? "yes" : "") : num(v);
      tr.appendChild(el("td", shown, key === "text" ? "text" : ""));
    }
    tr.addEventListener("click", () => select(row.i));
    rowsById[row.i] = tr; body.appendChild(tr);
  }
}
function sortBy(key) {
  const th = document.querySelector('#columns th[data-key="' + key + '"]');
  const dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
  for (const other of document.querySelectorAll("#columns th")) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
  const missing = dir > 0 ? Infinity : -Infinity;
  const key_of = (r) => {
    const v = value(r, key);
    return v === null || v === undefined ? missing : v;
  };
  const sorted = D.rows.slice().sort((a, b) => {
    const x = key_of(a), y = key_of(b);
    return (x < y ? -1 : x > y ? 1 : a.i - b.i) * (x === y ? 1 : dir);
  });
  const body = document.querySelector("#examples tbody");
  for (const r of sorted) body.appendChild(rowsById[r.i]);
}
function bound(id) { const v = $(id).value; return v === "" ? null : Number(v); }
function inRange(v, lo, hi) {
  if (lo === null && hi === null) return true;
  if (v === null || v === undefined) return false;
  return (lo === null || v >= lo) && (hi === null || v <= hi);
}
function applyFilters() {
  const text = $("filter-text").value.toLowerCase();
  let shown = 0;
  for (const row of D.rows) {
    const ok = (!text || row.text.toLowerCase().includes(text)) &&
      inRange(row.s[$("score-column").value], bound("score-min"), bound("score-max")) &&
      inRange(row.len, bound("len-min"), bound("len-max")) &&
      inRange(row.copy, bound("copy-min"), bound("copy-max")) &&
      inRange(row.oov, bound("oov-min"), bound("oov-max"));
    rowsById[row.i].hidden = !ok; shown += ok;
  }
  $("shown-count").textContent = shown + " of " + D.rows.length + " shown";
}
function dense(sparse, n) {
  const w = new Array(n).fill(0);
  for (let k = 0; k + 1 < sparse.length; k += 2) w[sparse[k]] = sparse[k + 1] / 1000;
  return w;
}
function bars(boxId, title, values, cls, attr) {
  const box = $(boxId); box.textContent = "";
  if (!values) return;
  box.appendChild(el("h2", title));
  const W = Math.max(200, Math.min(1200, values.length * 8)), H = 80, bw = W / values.length;
  const top = Math.max(...values.map((v) => v || 0), 1e-9);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H + 14);
  svg.id = boxId.replace("-box", "-chart");
  values.forEach((v, k) => {
    const r = document.createElementNS(svg.namespaceURI, "rect");
    const h = H * (v || 0) / top;
    r.setAttribute("x", k * bw); r.setAttribute("y", H - h);
    r.setAttribute("width", Math.max(bw - 1, 1));
    r.setAttribute("height", h); r.setAttribute("fill", "#4a78b5"); r.setAttribute("class", cls);
    r.setAttribute(attr, k); r.setAttribute("data-value", num(v));
    const t = document.createElementNS(svg.namespaceURI, "title");
    t.textContent = k + ": " + num(v);
    r.appendChild(t); svg.appendChild(r);
  });
  const label = document.createElementNS(svg.namespaceURI, "text");
  label.setAttribute("x", 2); label.setAttribute("y", H + 12); label.setAttribute("font-size", 10);
  label.textContent = "max " + top; svg.appendChild(label); box.appendChild(svg);
}
function frame(uri, label) {
  const s = el("span", undefined, "src-tok frame"), img = el("img");
  img.setAttribute("src", uri); img.alt = label; img.title = label;
  s.append(img, label);
  return s;
}
let current = null;
function select(index) {
  for (const tr of document.querySelectorAll("#examples tr.chosen")) tr.classList.remove("chosen");
  rowsById[index].classList.add("chosen");
  const row = D.rows.find((r) => r.i === index), d = D.details[index];
  current = d || null;
  $("detail-title").textContent = "Example " + index + (row.name ? " (" + row.name + ")" : "");
  $("example-scores").textContent =
    Object.entries(row.s).map(([k, v]) => k + " " + num(v)).join(", ");
  $("detail-missing").textContent = d ? "" : D.missing_note;
  $("pgen-legend").hidden = !(d && d.p_gen);
  for (const id of ["source", "output", "reference"]) $(id).textContent = "";
  showPosterior(d);
  if (!d) { $("output").textContent = row.text; return; }
  d.source.forEach((w, k) => {
    const s = d.frames && d.frames[k] ? frame(d.frames[k], w) : el("span", w, "src-tok");
    s.dataset.index = k; $("source").append(s, " ");
  });
  d.output.forEach((w, t) => {
    const s = el("span", w, "out-tok"); s.dataset.step = t;
    if (d.p_gen) {
      s.dataset.pgen = d.p_gen[t];
      s.style.background = "rgba(70,120,200," + (0.6 * d.p_gen[t]) + ")";
    }
    s.addEventListener("mouseenter", () => selectStep(t));
    s.addEventListener("click", () => selectStep(t));
    $("output").append(s, " ");
  });
  $("reference").textContent = d.reference;
  if (d.output.length) selectStep(0);
}
function showPosterior(d) {
  const labels = (d && d.labels) || {};
  $("posterior-note").textContent = labels.note || "";
  bars("sigma-box", labels.sigma || "Posterior scale per source position",
    d && d.sigma, "sigma-bar", "data-index");
  bars("scale-box", labels.scale || "Posterior scale per decoder step",
    d && d.scale, "scale-bar", "data-step");
  bars("kl-box", labels.kl || "KL per decoder step", d && d.kl, "kl-bar", "data-step");
}
function selectStep(t) {
  const d = current;
  for (const s of document.querySelectorAll("#output .out-tok")) {
    s.classList.toggle("selected", Number(s.dataset.step) === t);
  }
  if (!d.attn) return;
  const w = dense(d.attn[t], d.source.length), top = Math.max(...w, 1e-9);
  const order = w.map((v, k) => k).filter((k) => w[k] > 0).sort((a, b) => w[b] - w[a] || a - b);
  const chosen = new Set(order.slice(0, D.top_k));
  for (const s of document.querySelectorAll("#source .src-tok")) {
    const k = Number(s.dataset.index);
    s.dataset.weight = w[k]; s.classList.toggle("top", chosen.has(k));
    s.style.background = "rgba(255,130,0," + (w[k] / top) + ")";
  }
  for (const r of document.querySelectorAll(".kl-bar, .scale-bar")) {
    r.setAttribute("fill", Number(r.dataset.step) === t ? "#b32" : "#4a78b5");
  }
}
showMetrics(); buildList(); buildFilters();
for (const input of document.querySelectorAll("#filters input, #filters select")) {
  input.addEventListener("input", applyFilters);
}
applyFilters();
const first = D.rows.find((r) => D.details[r.i]) || D.rows[0];
if (first) select(first.i);
</script>
</body></html>
"""


# The comparison page's style.
_COMPARISON_CSS = """
body{font:14px sans-serif;margin:1em 2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top}
td.text{white-space:pre-wrap;max-width:30em}
tr.win td.diff{background:#d7f0d7}tr.loss td.diff{background:#f6d5d5}
"""


def corpus_numbers(row: Dict[str, Any]) -> Tuple[float, ...]:
    """A comparison's corpus metric as shown in the log and on the page: A, B, B - A, the
    interval's two ends and the p-value."""
    return tuple(row[key] for key in ("a", "b", "difference", "low", "high", "p_value"))


def comparison_page(record: Dict[str, Any], shown: Sequence[Dict[str, Any]]) -> str:
    """``comparison.html`` of ``acvi_tf.inference.compare``: one page without scripts or
    network access.

    At the top (``#corpus``) each corpus metric of A and B, the difference B - A, its 95%
    bootstrap interval and p-value; B's wins, losses and ties in the first metric over all
    examples (``#counts``); then (``#examples``) the examples ``shown``, each a row
    ``tr.example`` (class ``win`` where B scores higher in the first metric, ``loss``
    where lower) with its scores, its source (a column only where the decodes have
    sources), both outputs and the reference.

    Args:
      record: the comparison's record (``comparison.json``).
      shown: the examples to list, in the page's order.
    """
    e = html.escape
    key = record["metrics"][0]["key"]
    head = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>A vs B</title>",
        "<style>%s</style></head><body>" % _COMPARISON_CSS,
        "<h1>Comparison of %d examples</h1>" % record["examples"],
        "<p>A: <code id='path-a'>%s</code><br>B: <code id='path-b'>%s</code><br>"
        "per-example scores: %s</p>" % (e(record["a"]), e(record["b"]), e(record["scorer"])),
        "<table id='corpus'><tr><th>metric</th><th>A</th><th>B</th><th>B - A</th>"
        "<th>95% interval</th><th>p-value</th></tr>",
    ]
    for row in record["corpus"]:
        head.append(
            "<tr><td>%s</td><td>%.4f</td><td>%.4f</td><td>%+.4f</td><td>[%+.4f, %+.4f]</td>"
            "<td>%.3f</td></tr>" % ((e(row["metric"]),) + corpus_numbers(row))
        )
    samples = record["corpus"][0]
    head.append(
        "</table><p>Paired bootstrap: %d resamples of the examples (seed %d); the p-value is "
        "the share of resamples whose difference does not keep the observed sign.</p>"
        % (samples["samples"], samples["seed"])
    )
    differences = [example["difference"][key] for example in record["per_example"]]
    head.append(
        "<p id='counts'>%s: B wins on %d, loses on %d and ties on %d of the %d examples.</p>"
        % (
            e(record["metrics"][0]["label"]),
            sum(d > 0 for d in differences),
            sum(d < 0 for d in differences),
            sum(d == 0 for d in differences),
            len(differences),
        )
    )
    head.append(
        "<h2>The %d examples of largest %s difference</h2>"
        % (len(shown), e(record["metrics"][0]["label"]))
    )
    labels = [m["label"] for m in record["metrics"]]
    sources = any(example["source"] for example in record["per_example"])
    head.append(
        "<table id='examples'><tr><th>example</th>%s%s<th>A</th><th>B</th>"
        "<th>reference</th></tr>"
        % (
            "".join("<th>%s<br>A / B / B - A</th>" % e(label) for label in labels),
            "<th>source</th>" if sources else "",
        )
    )
    for example in shown:
        difference = example["difference"][key]
        cells = "".join(
            "<td class='diff'>%.4f / %.4f / %+.4f</td>"
            % (
                example["scores_a"][m["key"]],
                example["scores_b"][m["key"]],
                example["difference"][m["key"]],
            )
            for m in record["metrics"]
        )
        source = "<td class='text'>%s</td>" % e(example["source"] or "") if sources else ""
        head.append(
            "<tr class='example %s' data-id='%s' data-difference='%r'><td>%s</td>%s%s"
            "<td class='text'>%s</td><td class='text'>%s</td><td class='text'>%s</td></tr>"
            % (
                "win" if difference > 0 else "loss" if difference < 0 else "tie",
                e(example["id"]),
                difference,
                e(example["id"]),
                cells,
                source,
                e(example["a"]),
                e(example["b"]),
                e("\n".join(example["reference"])),
            )
        )
    head.append("</table></body></html>\n")
    return "\n".join(head)
