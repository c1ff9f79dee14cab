#!/usr/bin/env python
"""Screenshots of a built book (a static Sphinx site) for before/after comparisons.

    .venv/bin/python docs/review/book-second-reading/shoot.py SITE_DIR OUT_DIR

Serves SITE_DIR with `python -m http.server` on 127.0.0.1 (a free port), drives Debian's chromium
(/usr/bin/chromium, through pip's playwright; never `playwright install`; nothing off the machine is requested:
every request to a host other than 127.0.0.1 is aborted), and for each entry of TARGETS writes OUT_DIR/<name>.png:

- kind "block": the element holding the target text (or matching the target selector), scrolled into view; the
  shot is its closest block ancestor (table, figure / image container, paragraph / list item, admonition, math
  block, div.cell), clipped to at most MAX_W x MAX_H px. column=TEXT: only the table's columns up to the one
  holding the cell TEXT.
- kind "viewport": the viewport (not the full page) at the target's width, after load (scrolled to the target's
  element when it names one); prints document.documentElement.scrollWidth and records the elements that make the
  page wider than the viewport.
- kind "header": the top `height` px of the page.

A target whose page or element is not found is logged as NOT FOUND and skipped (a failed shot as "error"). A
summary (JSON) goes to OUT_DIR/shots.json. SHOOT_ONLY=name1,name2 takes only those targets.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("SHOOT_CHROMIUM", "/usr/bin/chromium")
MAX_W, MAX_H = 1400, 900
LOAD_TIMEOUT_MS = 180_000
FIND_TIMEOUT_MS = 5_000

# name, page glob (relative to the site; the first match), how to find the element, width (default 1400), kind
# (default "block").
# text: Playwright get_by_text (substring, whitespace-normalised; first match) unless exact=True.
# selector: a CSS/Playwright selector instead of text (first match). has_text: narrows a selector to elements
# containing that text. block: a CSS selector for the ancestor to shoot instead of the default block ancestors.
TARGETS = [
    # docs/specs/02: the formula of the pinball loss; "q_u(x)$$" is the literal a stray $ once left in the text
    dict(name="spec02_formula_qu_literal", page="docs/specs/02*.html", text="q_u(x)$$"),
    dict(name="spec02_formula_pinball", page="docs/specs/02*.html", selector="li",
         has_text="trained with the pinball loss"),
    # notebooks/04
    dict(name="nb04_prose_randproj_efficientnet", page="notebooks/04*.html",
         text="Every extractor falls short of 1 on real data"),
    dict(name="nb04_prose_diadm", page="notebooks/04*.html", text="Kendall τ between the rankings"),
    dict(name="nb04_figure_E", page="notebooks/04*.html", selector='img[alt*="Figure E"], img[title*="Figure E"]'),
    dict(name="nb04_figure_A", page="notebooks/04*.html", selector='img[alt*="Figure A"], img[title*="Figure A"]'),
    dict(name="nb04_figure_F", page="notebooks/04*.html", selector='img[alt*="Figure F"], img[title*="Figure F"]'),
    dict(name="nb04_simulation_table", page="notebooks/04*.html", selector="table", has_text="missed high"),
    dict(name="nb04_parameter_table", page="notebooks/04*.html", selector="table", has_text="EFFICIENTNET_SIZE"),
    dict(name="nb04_covers_g_table", page="notebooks/04*.html", selector="table", has_text="covers g"),
    dict(name="nb04_covers_g_column", page="notebooks/04*.html", selector="table", has_text="covers g",
         column="covers g"),
    dict(name="nb04_memoriser_reading", page="notebooks/04*.html", text="The copies retrieve their own source"),
    dict(name="nb04_section1_PK_alpha", page="notebooks/04*.html", text="coupon-collector model: n draws give"),
    # notebooks/02
    dict(name="nb02_table_c32_w1", page="notebooks/02*.html", selector="table", has_text="class c32 100% w1"),
    dict(name="nb02_findings_box", page="notebooks/02*.html", selector="div.workbook-findings",
         block="div.workbook-findings"),
    dict(name="nb02_worst_case_grid_figure_E", page="notebooks/02*.html",
         selector='img[alt*="Figure E"], img[title*="Figure E"]'),
    # notebooks/01
    dict(name="nb01_reading_paired_t", page="notebooks/01*.html", text="with the paired t test"),
    dict(name="nb01_feature_space_table", page="notebooks/01*.html", selector="table", has_text="standardised"),
    dict(name="nb01_digest_speaks_of", page="notebooks/01*.html", text="The paper speaks of"),
    # notebooks/03
    dict(name="nb03_lp_table_P_rho", page="notebooks/03*.html", selector="table", has_text="P_Ri/ρ"),
    dict(name="nb03_mixed_precision_column", page="notebooks/03*.html", selector="table", has_text="P_Ri/ρ",
         column="max |LP − threshold| / LP"),
    # results pages
    dict(name="results01_members_below_auc", page="docs/results/01*.html", text="members below AUC 0.9 per C"),
    dict(name="results04_all_recorded_results", page="docs/results/04*.html", selector="h2",
         has_text="All recorded results", block="section"),
    # phones: the viewport at 390 px (README: scrolled to its results table)
    dict(name="w390_readme_results_table", page="README.html", kind="viewport", width=390, selector="table",
         has_text="headline"),
    dict(name="w390_spec01", page="docs/specs/01*.html", kind="viewport", width=390),
    dict(name="w390_spec03", page="docs/specs/03*.html", kind="viewport", width=390),
    dict(name="w390_sweeps", page="docs/sweeps.html", kind="viewport", width=390),
    dict(name="w390_teaching", page="docs/teaching.html", kind="viewport", width=390),
    # the page header of a notebook page
    dict(name="header_nb01", page="notebooks/01*.html", kind="header", height=200),
]

# the block ancestor shot for an element (closest match of these, in this order of preference per element)
BLOCK = ("table, figure, div.cell_output, div.output, p, li, pre, dl, blockquote, div.admonition, aside, "
         "div.math, mjx-container[display='true'], div.cell, section")

READY_JS = "() => [...document.images].every(i => i.complete)"
MATH_READY_JS = """() => !document.querySelector('script[src*="mathjax"], script[src*="MathJax"]')
  || !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"""

# The block ancestor of `el` (an image: its <figure>, or the container holding the image alone), scrolled so that
# its top is just below the page's sticky header; its box in viewport coordinates (the shot is of the viewport, so
# the page's layout is the reader's: no full-page capture, which resizes the viewport and reflows the page).
BLOCK_BOX_JS = """([el, block, fallback, column]) => {
  let target = null;
  if (block) target = el.closest(block);
  if (!target && el.tagName === 'IMG') {
    target = el.closest('figure');
    if (!target) { target = el; while (target.parentElement && target.parentElement.children.length === 1
                                       && target.parentElement.tagName !== 'BODY') target = target.parentElement; }
  }
  if (!target) target = el.closest(fallback) || el;
  document.documentElement.style.scrollBehavior = 'auto';  // the theme scrolls smoothly: measure after the scroll
  target.scrollIntoView({block: 'start', inline: 'nearest', behavior: 'instant'});
  // the bars that stay at the top of the viewport over the target's columns (the theme's sticky headers)
  const t = target.getBoundingClientRect();
  let top = 8;
  for (const h of document.querySelectorAll('body *')) {
    const st = getComputedStyle(h);
    if (st.position !== 'sticky' && st.position !== 'fixed') continue;
    const b = h.getBoundingClientRect();
    if (b.height > 0 && b.height < 250 && b.top <= 2 && b.bottom > 0 && b.left < t.right && b.right > t.left)
      top = Math.max(top, b.bottom + 8);
  }
  window.scrollBy({top: target.getBoundingClientRect().top - top, behavior: 'instant'});
  let r = target.getBoundingClientRect();
  r = {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
  if (column) {  // clip to the table's left edge .. the right edge of the column holding the cell `column`
    const cell = [...target.querySelectorAll('td, th')].find(c => c.textContent.trim() === column);
    if (!cell) return null;
    r.right = cell.getBoundingClientRect().right + 8;
  }
  // what the reader sees of it: cut by every ancestor that clips its overflow (a table's scrolling container)
  for (let a = target.parentElement; a && a !== document.body; a = a.parentElement) {
    const st = getComputedStyle(a), b = a.getBoundingClientRect();
    if (st.overflowX !== 'visible') { r.left = Math.max(r.left, b.left); r.right = Math.min(r.right, b.right); }
    if (st.overflowY !== 'visible') { r.top = Math.max(r.top, b.top); r.bottom = Math.min(r.bottom, b.bottom); }
  }
  r.width = r.right - r.left; r.height = r.bottom - r.top;
  const desc = target.tagName.toLowerCase() + (target.className && typeof target.className === 'string'
      ? '.' + target.className.trim().split(/\\s+/).join('.') : '');
  return {x: r.left, y: r.top, w: r.width, h: r.height, vw: window.innerWidth, vh: window.innerHeight, desc,
          text: (target.innerText || '').slice(0, 160)};
}"""


# what makes the page wider than the viewport: the outermost elements that reach past its right edge and that no
# ancestor clips or scrolls (up to 5: the element, its right edge in px, the start of its text)
OVERFLOW_JS = """() => {
  const cw = document.documentElement.clientWidth, out = [];
  const clipped = el => { for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement)
                            if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= cw + 1 || clipped(el)) continue;
    if (['fixed', 'absolute'].includes(getComputedStyle(el).position)) continue;  // off-canvas drawers and the like
    const p = el.parentElement, pr = p && p.getBoundingClientRect();
    if (p && p !== document.body && pr.right > cw + 1 && !clipped(p)) continue;  // its parent is listed instead
    out.push(el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className.trim()
             ? '.' + el.className.trim().split(/\\s+/).join('.') : '') + ' @' + Math.round(r.right) + 'px: '
             + (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60));
    if (out.length >= 5) break;
  }
  return out;
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(site: Path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def open_page(page, url: str) -> None:
    page.goto(url, wait_until="load", timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function(READY_JS, timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function(MATH_READY_JS, timeout=LOAD_TIMEOUT_MS)
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.wait_for_timeout(200)


def find(page, target):
    """The first element of the target, or None."""
    if "selector" in target:
        loc = page.locator(target["selector"])
        if "has_text" in target:
            loc = loc.filter(has_text=target["has_text"])
    else:
        loc = page.get_by_text(target["text"], exact=target.get("exact", False))
    loc = loc.first
    try:
        loc.wait_for(state="attached", timeout=FIND_TIMEOUT_MS)
    except Exception:
        return None
    return loc


def shoot_block(page, target, out: Path) -> dict:
    loc = find(page, target)
    if loc is None:
        return {"status": "NOT FOUND"}
    handle = loc.element_handle()
    box = page.evaluate(BLOCK_BOX_JS, [handle, target.get("block"), BLOCK, target.get("column")])
    if box is None:
        return {"status": "NOT FOUND", "why": f"no cell {target.get('column')!r} in the table"}
    if box["w"] < 1 or box["h"] < 1:
        return {"status": "NOT FOUND", "why": f"element {box['desc']} has no box (hidden?)"}
    page.wait_for_timeout(300)  # lazy images / MathJax after the scroll
    box2 = page.evaluate(BLOCK_BOX_JS, [handle, target.get("block"), BLOCK, target.get("column")])  # settled
    box.update({k: box2[k] for k in ("x", "y", "w", "h")})
    x0, y0 = max(box["x"], 0), max(box["y"], 0)
    x1 = min(box["x"] + box["w"], x0 + MAX_W, box["vw"])
    y1 = min(box["y"] + box["h"], y0 + MAX_H, box["vh"])
    clip = {"x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0}
    page.screenshot(path=str(out), clip=clip)
    return {"status": "ok", "block": box["desc"], "size": [round(box["w"]), round(box["h"])],
            "shot": [round(clip["width"]), round(clip["height"])],
            "clipped": clip["width"] < box["w"] - 1 or clip["height"] < box["h"] - 1, "text": box["text"][:100]}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    site, out = Path(argv[1]).resolve(), Path(argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(os.environ.get("SHOOT_ONLY", "").split(",")) - {""}
    from playwright.sync_api import sync_playwright

    results = {}
    with serve(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        contexts = {}
        for target in TARGETS:
            name = target["name"]
            if only and name not in only:
                continue
            kind, width = target.get("kind", "block"), target.get("width", MAX_W)
            pages = sorted(glob.glob(str(site / target["page"])))
            if not pages:
                print(f"{name}: NOT FOUND (no page {target['page']})", flush=True)
                results[name] = {"status": "NOT FOUND", "why": f"no page {target['page']}"}
                continue
            rel = Path(pages[0]).relative_to(site).as_posix()
            if width not in contexts:
                ctx = browser.new_context(viewport={"width": width, "height": MAX_H + 100 if width >= 1000 else 844},
                                          device_scale_factor=1)
                ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                          or route.request.url.startswith("data:") else route.abort())
                contexts[width] = ctx
            page = contexts[width].new_page()
            path = out / f"{name}.png"
            t0 = time.time()
            try:
                open_page(page, f"{base}/{rel}")
                if kind == "block":
                    res = shoot_block(page, target, path)
                elif kind == "viewport":
                    if ("selector" in target or "text" in target) and (loc := find(page, target)) is not None:
                        loc.evaluate("el => el.scrollIntoView({block: 'start'})")
                        page.wait_for_timeout(300)
                    page.screenshot(path=str(path))
                    res = {"status": "ok", "scrollWidth": page.evaluate("() => document.documentElement.scrollWidth"),
                           "clientWidth": page.evaluate("() => document.documentElement.clientWidth"),
                           "overflowing": page.evaluate(OVERFLOW_JS)}
                elif kind == "header":
                    page.evaluate("() => window.scrollTo(0, 0)")
                    clip = {"x": 0, "y": 0, "width": width, "height": target.get("height", 200)}
                    page.screenshot(path=str(path), clip=clip)
                    res = {"status": "ok"}
                else:
                    res = {"status": "error", "why": f"unknown kind {kind}"}
            except Exception as err:  # keep going: one failed target does not stop the others
                res = {"status": "error", "why": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
            finally:
                page.close()
            res.update(page=rel, width=width, seconds=round(time.time() - t0, 1))
            if res["status"] != "ok" and path.exists():
                path.unlink()
            results[name] = res
            extra = {k: v for k, v in res.items() if k not in ("page", "width", "seconds", "status")}
            print(f"{name}: {res['status']} {rel} @{width} {json.dumps(extra, ensure_ascii=False)}", flush=True)
        browser.close()
    (out / "shots.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    missing = [n for n, r in results.items() if r["status"] != "ok"]
    print("NOT FOUND / failed:", ", ".join(missing) if missing else "none")
    for n, r in results.items():
        if "scrollWidth" in r:
            print(f"scrollWidth {n}: {r['scrollWidth']} (clientWidth {r['clientWidth']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
