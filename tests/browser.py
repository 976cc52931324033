"""A decode's ``report.html`` in headless Chromium (Debian's ``chromium``): the page's
embedded data, a probe script that clicks through the page and reads its DOM back, the
page's own requests from Chromium's network log, and a screenshot."""

import html
import json
import os
import re
import subprocess

import pytest

CHROMIUM = "/usr/bin/chromium"

# Appended to a copy of a page: selects example EXAMPLE's output token STEP, sorts by the
# first score column (twice), filters by OOV count, by the text WORD and by the last score
# column from SCORE_MIN, clears the filters, selects the first example without detail, and
# writes what the DOM shows on the way into #test-result.
PROBE = """<script>
(() => {
  const ids = (sel, attr) => [...document.querySelectorAll(sel)].map((e) => e.dataset[attr]);
  const out = {};
  document.querySelector('#examples tr.example[data-index="EXAMPLE"]').click();
  document.querySelector('#output .out-tok[data-step="STEP"]').click();
  out.top = ids("#source .src-tok.top", "index").map(Number);
  out.topWords = [...document.querySelectorAll("#source .src-tok.top")].map((e) => e.textContent);
  out.selected = ids("#output .out-tok.selected", "step").map(Number);
  out.frames = ids("#source .src-tok.frame", "index").map(Number);
  out.images = [...document.querySelectorAll("#source .src-tok.frame img")].map((e) => e.src);
  out.sigmaBars = document.querySelectorAll("#sigma-chart .sigma-bar").length;
  out.klBars = document.querySelectorAll("#kl-chart .kl-bar").length;
  out.scaleBars = document.querySelectorAll("#scale-chart .scale-bar").length;
  out.titles = ["sigma", "scale", "kl"].map((n) => {
    const title = document.querySelector("#" + n + "-box h2");
    return title ? title.textContent : null;
  });
  out.posteriorNote = document.getElementById("posterior-note").textContent;
  out.legend = !document.getElementById("pgen-legend").hidden;
  out.columns = [...document.querySelectorAll("#columns th")].map((e) => e.textContent);
  out.ranges = [...document.querySelectorAll("#filters .range")].filter((e) => !e.hidden)
    .map((e) => e.dataset.key);
  out.scoreColumns = [...document.querySelectorAll("#score-column option")]
    .map((e) => e.value);
  out.filterRule = document.getElementById("filters").title;
  const header = document.querySelectorAll("#columns th")[1];
  header.click();
  out.first = ids("#examples tbody tr", "score").map(Number);
  header.click();
  out.second = ids("#examples tbody tr", "score").map(Number);
  const shown = () => [...document.querySelectorAll("#examples tbody tr")]
    .filter((r) => !r.hidden).map((r) => Number(r.dataset.index)).sort((a, b) => a - b);
  const set = (id, value) => {
    document.getElementById(id).value = value;
    document.getElementById(id).dispatchEvent(new Event("input"));
  };
  set("oov-min", "1");
  out.withOovs = shown();
  set("oov-min", "");
  set("filter-text", "WORD");
  out.withWord = shown();
  set("filter-text", "");
  set("score-column", out.scoreColumns[out.scoreColumns.length - 1] || "");
  set("score-min", "SCORE_MIN");
  out.withScore = shown();
  set("score-min", "");
  out.cleared = shown();
  out.note = document.getElementById("detail-note").textContent;
  const bare = document.querySelector('#examples tr.example[data-detail="0"]');
  if (bare) {
    bare.click();
    out.missing = document.getElementById("detail-missing").textContent;
    out.bareLegend = !document.getElementById("pgen-legend").hidden;
    out.bareSource = document.getElementById("source").textContent;
  }
  const pre = document.createElement("pre");
  pre.id = "test-result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium():
    """Debian's Chromium, or a skip (a failure under ``ACVI_REQUIRE_BROWSER=1``)."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    reason = "%s is missing (Debian: apt-get install chromium)" % CHROMIUM
    if os.environ.get("ACVI_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + ", and ACVI_REQUIRE_BROWSER=1 requires it")
    pytest.skip(reason)


def page_data(path):
    """``(the page's text, its embedded data)`` of a ``report.html``."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S
    )
    return text, json.loads(found.group(1))


def run_chromium(tmp_path, url, *args):
    """Chromium's standard output for ``url``, headless, with a fresh profile."""
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--user-data-dir=%s" % (tmp_path / "profile"),
        *args,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout


def page_requests(net_log):
    """The URLs that the page requested: every URL request in a Chromium net log except
    the browser's own (those whose job starts with no initiating origin)."""
    with open(net_log, encoding="utf-8") as f:
        log = json.load(f)
    url_request = log["constants"]["logSourceType"]["URL_REQUEST"]
    urls, browsers = {}, set()
    for event in log["events"]:
        source, params = event["source"], event.get("params", {})
        if source["type"] != url_request:
            continue
        if "url" in params:
            urls.setdefault(source["id"], params["url"])
        if params.get("initiator") == "not an origin":
            browsers.add(source["id"])
    return sorted(url for source, url in urls.items() if source not in browsers)


def probe(path, tmp_path, example, step, word, score_min=0.0):
    """Runs ``PROBE`` on a copy of the page at ``path``.

    Returns:
      ``(what the probe read, the URLs the page requested)``.
    """
    text, _ = page_data(path)
    copy = tmp_path / "probe.html"
    script = PROBE.replace("EXAMPLE", str(example)).replace("STEP", str(step))
    script = script.replace("SCORE_MIN", repr(float(score_min)))
    copy.write_text(text + script.replace("WORD", word), encoding="utf-8")
    net_log = tmp_path / "net.json"
    dom = run_chromium(tmp_path, copy.as_uri(), "--log-net-log=%s" % net_log, "--dump-dom")
    found = re.search(r'<pre id="test-result">(.*?)</pre>', dom)
    return json.loads(html.unescape(found.group(1))), page_requests(net_log)


def screenshot(path, tmp_path):
    """The bytes of a 1200x900 screenshot of the page at ``path``."""
    shot = tmp_path / "report.png"
    run_chromium(
        tmp_path,
        "file://" + os.path.abspath(path),
        "--screenshot=%s" % shot,
        "--window-size=1200,900",
    )
    with open(shot, "rb") as f:
        return f.read()


def check_page(path, tmp_path):
    """Opens a ``report.html`` and checks it against its own embedded data: selecting the
    output token of the example and step whose largest weights stand clearest outlines
    exactly the source tokens of those weights, sorting by the first score orders the
    examples, the OOV and text filters show the right ones, the copy rate and OOV columns
    and p_gen's legend show only where the page has them, the page requests nothing and
    its screenshot is a PNG.

    Returns:
      ``(the probe's result, the page's data, the example, the step)``.
    """
    _, data = page_data(path)
    k = data["top_k"]
    best = (-1.0, None, None, None)
    for index, detail in data["details"].items():
        for step, row in enumerate(detail.get("attn", [])):
            weights = [0] * len(detail["source"])
            for position, weight in zip(row[0::2], row[1::2]):
                weights[position] = weight
            ranked = sorted(weights, reverse=True) + [0]
            if ranked[k - 1] - ranked[k] > best[0]:
                best = (ranked[k - 1] - ranked[k], int(index), step, weights)
    gap, example, step, weights = best
    assert gap > 0, "no step of the page has %d clearly largest weights" % k
    rows = data["rows"]
    word = max(rows[0]["text"].split() or [""], key=len)
    result, requests = probe(path, tmp_path, example, step, word)
    expected = sorted(range(len(weights)), key=lambda i: -weights[i])[:k]
    assert sorted(result["top"]) == sorted(expected)
    assert result["selected"] == [step]
    name = next(iter(rows[0]["s"]))
    scores = sorted(r["s"][name] for r in rows)
    assert result["first"] == scores[::-1] and result["second"] == scores
    assert result["withOovs"] == [r["i"] for r in rows if (r["oov"] or 0) >= 1]
    assert result["withWord"] == [r["i"] for r in rows if word.lower() in r["text"].lower()]
    # the copy rate and OOV columns and filters where some row has them; p_gen's legend
    # where the selected example has p_gen
    for key, label in (("copy", "copy rate"), ("oov", "OOVs")):
        given = any(r[key] is not None for r in rows)
        assert (label in result["columns"]) == (key in result["ranges"]) == given
    assert result["legend"] == ("p_gen" in data["details"][str(example)])
    assert requests == []
    png = screenshot(path, tmp_path)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000
    return result, data, example, step
