#!/usr/bin/env python3
"""Measures a dashboard page laid out by headless Chromium, as a person would see it at a given window width.

Usage: browser_measure.py CHROMIUM URL WIDTH HEIGHT SCREENSHOT.png CHECK...

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages separated by NUL
bytes on file descriptors 3 and 4, so no WebSocket library is needed), with the viewport of a phone or a desktop
(Emulation.setDeviceMetricsOverride), waits for the page's load event, measures the laid-out elements
(getBoundingClientRect, after layout) and saves a full-page screenshot (at most 6000 px high).

CHECKs (each prints "ok: …" or "FAIL: …"; the exit status is the number of failures):
  no-sideways-scroll   the page is no wider than the viewport (no horizontal scrolling)
  verdicts-visible     every history row's verdict badge lies inside the viewport horizontally (at least 10 rows)
  minibars-visible     every history mini-bar drawing and each of its bars has a rendered width > 0 (>= 10 rows)
  verdict-visible      the test page's headline, verdict badge and explanation lie inside the viewport
  chart-text-readable  visible chart tick and axis labels are at least 9 px high on screen
  averages-visible     the two average-speed bars are drawn with a width > 0
  tables-fit           no table is wider than its scrolling box (nothing hidden to the right)
  timeline-visible     the timeline's legend entries, "since when" rows and day-by-day charts lie inside the viewport
                       (the since table fits its box), with cells drawn
  labels-apart         no two chart labels (ticks, axis titles, legend, markers) overlap on screen
  tables-scroll        breakdown and WeHeY tables fit their boxes; any wider table scrolls inside its box
  live-chart-break     the run page's live chart draws each replay once per run and a labelled break between runs
  settings-submit      edits the settings page's p-threshold in the form, submits it, and checks the page after it
  no-console-errors    no uncaught exception, console.error or browser error (Content-Security-Policy refusals,
                       failed loads other than /favicon.ico) while the page loaded; seen through the protocol's
                       Runtime and Log events (Chromium 156's headless mode no longer writes them to its log)
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

MEASURE = r"""
(() => {
  const vw = document.documentElement.clientWidth;
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width, height: r.height}; };
  const visible = (e) => { const s = getComputedStyle(e); return s.display !== 'none' && s.visibility !== 'hidden' && e.getBoundingClientRect().width > 0; };
  const rows = [...document.querySelectorAll('table.history tbody tr')];
  return JSON.stringify({
    viewport: vw,
    scrollWidth: document.documentElement.scrollWidth,
    verdicts: rows.map(r => { const b = r.querySelector('.badge'); return b ? Object.assign(box(b), {text: b.textContent.trim()}) : null; }),
    minibars: rows.map(r => { const s = r.querySelector('svg.mini-bars'); return s ? {svg: box(s).width, bars: [...s.querySelectorAll('rect')].map(x => box(x).width)} : null; }),
    headline: [...document.querySelectorAll('h1, .verdict .badge, .explanation')].map(e => Object.assign(box(e), {text: e.textContent.trim().slice(0, 80)})),
    chartText: [...document.querySelectorAll('svg.chart text.tick, svg.chart text.axis-label, svg.chart text.legend-label')].filter(visible).map(e => box(e).height),
    averages: [...document.querySelectorAll('#average-bars rect')].map(e => box(e).width),
    timeline: {legend: [...document.querySelectorAll('.timeline-legend li')].map(box), since: [...document.querySelectorAll('table.since tbody tr')].map(box), sinceWrap: [...document.querySelectorAll('.timeline-since .table-wrap')].map(w => ({client: w.clientWidth, scroll: w.scrollWidth})), charts: [...document.querySelectorAll('svg.timeline-chart')].map(box), cells: document.querySelectorAll('svg.timeline-chart .tl-cell').length},
    tables: [...document.querySelectorAll('.table-wrap')].map(w => ({id: (w.querySelector('table') || {}).id || (w.querySelector('table') || {}).className, client: w.clientWidth, scroll: w.scrollWidth, overflowX: getComputedStyle(w).overflowX, kind: (w.querySelector('table') || {}).className || ''})),
    ticks: [...document.querySelectorAll('svg.chart')].map(s => ({id: s.id, labels: [...s.querySelectorAll('text.tick, text.axis-label, text.legend-label, text.run-break-label, text.clip-note')].filter(visible).map(e => Object.assign(box(e), {top: e.getBoundingClientRect().top, bottom: e.getBoundingClientRect().bottom, text: e.textContent.trim()}))})),
    liveChart: (() => { const c = document.querySelector('#live-chart'); return c ? {original: c.querySelectorAll('path.series-original').length, control: c.querySelectorAll('path.series-control').length, breaks: c.querySelectorAll('line.run-break').length, breakLabels: [...c.querySelectorAll('text.run-break-label')].map(e => e.textContent.trim())} : null; })(),
  });
})()
"""


# The settings page's form: the p-value threshold set to 0.05 (the value a person types), then submitted.
SUBMIT_SETTING = r"""
(() => {
  const input = document.querySelector('#setting-p-threshold');
  input.value = input.value === '0.05' ? '0.02' : '0.05';
  window.__submitted = input.value;
  document.querySelector('#settings-form').submit();
})()
"""

AFTER_SUBMIT = r"""
JSON.stringify({
  saved: (document.querySelector('#settings-saved') || {}).textContent || null,
  problem: (document.querySelector('#settings-problem') || {}).textContent || null,
  value: (document.querySelector('#setting-p-threshold') || {}).value || null,
  server: (document.querySelector('#setting-server') || {}).value || null,
})
"""


def _pipes_to_3_and_4(commands, replies):
    # In the child: Chromium reads commands on fd 3 and writes replies on fd 4.
    commands, replies = os.dup(commands), os.dup(replies)
    os.dup2(commands, 3)
    os.dup2(replies, 4)


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="wehe-measure-")
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--user-data-dir=" + self.profile,
             "--remote-debugging-pipe", "about:blank"],
            close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: _pipes_to_3_and_4(commands_read, replies_write))
        os.close(commands_read)
        os.close(replies_write)
        self.next_id = 0
        self.buffer = b""
        self.events = []

    def _read(self, deadline):
        while b"\0" not in self.buffer:
            if time.time() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.replies, 65536)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._read(deadline))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        subprocess.run(["rm", "-rf", self.profile], check=False)


def main():
    if len(sys.argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    chromium, url, width, height, shot = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    checks = sys.argv[6:]
    browser = Browser(chromium)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Page.enable", session=session)
        browser.call("Runtime.enable", session=session)
        browser.call("Log.enable", session=session)
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}, session=session)
        browser.call("Page.navigate", {"url": url}, session=session)
        browser.wait_event("Page.loadEventFired")
        # Let deferred scripts and their first timers run before measuring.
        browser.call("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 300))", "awaitPromise": True},
                     session=session)
        value = browser.call(
            "Runtime.evaluate", {"expression": MEASURE, "returnByValue": True}, session=session)["result"]["value"]
        data = json.loads(value)
        metrics = browser.call("Page.getLayoutMetrics", session=session)
        full = min(6000, int(metrics.get("cssContentSize", metrics.get("contentSize"))["height"]))
        image = browser.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True,
             "clip": {"x": 0, "y": 0, "width": width, "height": max(height, full), "scale": 1}},
            session=session, timeout=60)["data"]
        with open(shot, "wb") as out:
            out.write(base64.b64decode(image))
        if "settings-submit" in checks:
            # Edit one setting in the page's form as a person would and submit it; read the page it leads to.
            browser.call("Runtime.evaluate", {"expression": SUBMIT_SETTING}, session=session)
            browser.wait_event("Page.loadEventFired")
            data["afterSubmit"] = json.loads(browser.call(
                "Runtime.evaluate", {"expression": AFTER_SUBMIT, "returnByValue": True},
                session=session)["result"]["value"])
    finally:
        browser.close()

    errors = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append("exception: " + (details.get("exception", {}).get("description") or details.get("text", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                      for a in params.get("args", [])))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error" and not entry.get("url", "").endswith("/favicon.ico"):
                errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())

    failures = 0

    def report(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + what)
        failures += 0 if ok else 1

    vw = data["viewport"]
    for check in checks:
        if check == "no-sideways-scroll":
            report(data["scrollWidth"] <= vw, f"page width {data['scrollWidth']} px within the {vw} px viewport")
        elif check == "verdicts-visible":
            badges = [b for b in data["verdicts"] if b]
            outside = [b for b in badges if b["left"] < 0 or b["right"] > vw or b["width"] <= 0]
            report(len(badges) >= 10 and not outside,
                   f"{len(badges) - len(outside)} of {len(badges)} history verdicts inside the {vw} px viewport"
                   + (f" (first outside: {outside[0]})" if outside else ""))
        elif check == "minibars-visible":
            bars = [b for b in data["minibars"] if b]
            empty = [b for b in bars if b["svg"] <= 0 or not b["bars"] or min(b["bars"]) <= 0]
            widths = sorted(b["svg"] for b in bars)
            report(len(bars) >= 10 and not empty,
                   f"{len(bars) - len(empty)} of {len(bars)} mini-bar drawings with non-zero bars"
                   + (f" (drawing widths {widths[0]:.0f}-{widths[-1]:.0f} px)" if widths else ""))
        elif check == "verdict-visible":
            items = data["headline"]
            outside = [i for i in items if i["left"] < 0 or i["right"] > vw or i["width"] <= 0]
            report(len(items) >= 3 and not outside,
                   "headline, verdict and explanation inside the viewport: "
                   + " | ".join(i["text"] for i in items[:2]))
        elif check == "chart-text-readable":
            heights = data["chartText"]
            report(bool(heights) and min(heights) >= 9,
                   f"{len(heights)} chart labels, smallest {min(heights) if heights else 0:.1f} px high (>= 9)")
        elif check == "averages-visible":
            widths = data["averages"]
            report(len(widths) == 2 and min(widths) > 0, f"average-speed bars {[round(w) for w in widths]} px wide")
        elif check == "timeline-visible":
            t = data["timeline"]
            parts = t["legend"] + t["since"] + t["charts"]
            outside = [b for b in parts if b["left"] < 0 or b["right"] > vw + 0.5 or b["width"] <= 0]
            cut = [w for w in t["sinceWrap"] if w["scroll"] > w["client"] + 1]
            report(len(t["legend"]) >= 8 and t["since"] and t["charts"] and t["cells"] > 0 and not outside and not cut,
                   f"{len(t['legend'])} legend entries, {len(t['since'])} since-when rows, {len(t['charts'])} charts"
                   f" ({t['cells']} day cells) inside the {vw} px viewport"
                   + (f" (outside: {outside[:3]})" if outside else "") + (f" (since table cut: {cut})" if cut else ""))
        elif check == "tables-fit":
            wide = [t for t in data["tables"] if t["scroll"] > t["client"] + 1]
            report(not wide, f"{len(data['tables'])} tables fit their boxes"
                   + (f" (overflowing: {wide})" if wide else ""))
        elif check == "labels-apart":
            # Chart labels (ticks, axis titles, legend, markers) whose boxes overlap on screen, chart by chart.
            overlaps = []
            for chart in data["ticks"]:
                labels = chart["labels"]
                for i, a in enumerate(labels):
                    for b in labels[i + 1:]:
                        if (min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1
                                and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1):
                            overlaps.append(f"{chart['id']}: '{a['text']}' / '{b['text']}'")
            count = sum(len(c["labels"]) for c in data["ticks"])
            report(count > 0 and not overlaps, f"{count} labels in {len(data['ticks'])} charts, none overlapping"
                   + (f" (overlapping: {overlaps[:6]})" if overlaps else ""))
        elif check == "tables-scroll":
            # A table wider than its box scrolls inside it (overflow-x auto or scroll) instead of being cut, and
            # the breakdown and WeHeY tables fit the box outright.
            cut = [t for t in data["tables"] if t["scroll"] > t["client"] + 1 and t["overflowX"] not in ("auto", "scroll")]
            wide = [t["id"] for t in data["tables"] if t["scroll"] > t["client"] + 1
                    and ("breakdown" in t["kind"] or "wehey" in t["kind"])]
            scrolling = [t["id"] for t in data["tables"] if t["scroll"] > t["client"] + 1]
            report(bool(data["tables"]) and not cut and not wide,
                   f"{len(data['tables'])} tables: breakdown and WeHeY tables fit, wider ones scroll in their box"
                   + f" ({scrolling or 'none'})" + (f"; cut: {cut}" if cut else "") + (f"; too wide: {wide}" if wide else ""))
        elif check == "live-chart-break":
            # The live chart of a run with a confirmation run: each replay drawn as two lines (one per run), and
            # a labelled break between the runs.
            live = data["liveChart"]
            report(bool(live) and live["original"] >= 2 and live["control"] >= 2 and live["breaks"] >= 1
                   and all(live["breakLabels"]),
                   f"live chart: {live}")
        elif check == "settings-submit":
            # The settings form, submitted in the browser (its own origin and token): the page says which key was
            # saved and shows the new value; the key not edited keeps its value.
            after = data.get("afterSubmit") or {}
            report(after.get("saved") == "Saved: p-threshold." and after.get("value") in ("0.05", "0.02")
                   and after.get("server") and not after.get("problem"), f"settings form submitted: {after}")
        elif check == "no-console-errors":
            report(not errors, "no console errors" if not errors else "console errors: " + " | ".join(errors))
        else:
            report(False, f"unknown check {check}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
