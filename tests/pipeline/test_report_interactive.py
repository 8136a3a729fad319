"""The interactive page (interactive.html) opened in a real headless Chromium: it draws without a
console error and offline (plotly.js inlined), a click on a solver in the legend hides its lines,
the dataset menu changes what is drawn (and the problem menu to that dataset's problems), the
metric and x menus restyle every line; a screenshot is produced. Skipped, saying so, only where
no Chromium can be found."""
import re
import time

import pandas as pd
import pytest

from pipeline.report.interactive import build_figure, write_page
from pipeline.report.registry import ReportData

from .browser import Chromium, chromium_path
from .report_data import folds, rows, traces_for

PLOT = "document.getElementById('svmbench-traces')"
LINES = f"[...{PLOT}.querySelectorAll('.scatterlayer .trace')]"


def _data():
    """Two datasets; on each dcd and liblinear at two C (linear), smo at one C (rbf); 3 folds."""
    specs = []
    for ds in ("alpha", "beta"):
        for C in (0.1, 1.0):
            for entry in ("dcd", "liblinear"):
                specs += folds({"dataset": ds, "solver_entry": entry, "solver": entry, "C": C}, 3)
        specs += folds({"dataset": ds, "solver_entry": "smo", "solver": "smo", "kernel": "rbf", "gamma": 0.5,
                        "intercept": "free", "C": 1.0}, 3)
    res = rows(specs)
    tr = traces_for(res)
    # beta converges along another curve (not a rescaling, which autorange would draw alike):
    # P = f* (1 + 10^-(k^2 / 6)), so its lines have other shapes than alpha's.
    beta = tr["key"].map(dict(zip(res["key"], res["dataset"]))) == "beta"
    tr.loc[beta, "primal"] = 10.0 * (1 + 10.0 ** -(tr.loc[beta, "iteration"] ** 2 / 6))
    return ReportData(res, tr, name="t")


def test_the_page_is_one_offline_file_with_every_fit_a_line(tmp_path):
    data = _data()
    fig = build_figure(data)
    assert len(fig["data"]) == len(data.results)              # a line per fit (fold)
    names = [m["label"] for m in fig["layout"]["updatemenus"][2]["buttons"]]
    assert names == ["(P - f*) / |f*|", "(P - D) / |P|", "test error"]
    page = tmp_path / "interactive.html"
    assert write_page(data, page, "t")
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)           # nothing fetched: plotly.js is in the file
    assert "plotly.js v" in text and len(text) > 1_000_000
    assert not write_page(ReportData(data.results, data.traces.iloc[:0], name="t"), page, "t") and not page.exists()


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium): the page is not opened")
    b = Chromium(path)
    yield b
    b.close()


def _drawn(browser):
    """What the page draws now, read from its SVG: the path of every visible line, the legend, the title."""
    return browser.eval(f"""({{
        paths: {LINES}.map(t => (t.querySelector('.js-line') || {{}}).getAttribute ? t.querySelector('.js-line').getAttribute('d') : ''),
        legend: [...{PLOT}.querySelectorAll('.legend .traces')].map(e => [e.textContent, getComputedStyle(e).opacity]),
        title: ({PLOT}.querySelector('.gtitle') || {{}}).textContent}})""")


def _menu_item(menu: int, text: str) -> str:
    """JavaScript finding the open dropdown's button labelled `text` (menu: the updatemenu's index)."""
    return (f"[...{PLOT}.querySelectorAll('.updatemenu-dropdown-button')]"
            f".find(b => b.textContent === {text!r})")


@pytest.mark.slow
def test_the_page_in_headless_chromium(browser, tmp_path):
    data = _data()
    page = tmp_path / "interactive.html"
    write_page(data, page, "svmbench traces: t")
    browser.errors.clear()
    browser.open(page, f"{LINES}.length > 0")
    first = _drawn(browser)
    # Problem 1 of dataset alpha (kernel=linear C=0.1): dcd and liblinear, 3 folds each.
    assert first["title"] == "alpha | kernel=linear C=0.1" and len(first["paths"]) == 6
    assert [name for name, _ in first["legend"]] == ["dcd", "liblinear"]
    browser.screenshot(tmp_path / "page.png")
    assert (tmp_path / "page.png").stat().st_size > 10_000

    # Solver toggle: a click on "dcd" in the legend hides its three lines (plotly waits out a double click).
    browser.click_element(f"[...{PLOT}.querySelectorAll('.legend .traces')].find(e => e.textContent === 'dcd')"
                          ".querySelector('.legendtoggle')")
    browser.wait(f"{LINES}.length === 3")
    assert dict(_drawn(browser)["legend"])["dcd"] != "1"          # its entry greyed, still there to click back
    browser.click_element(f"[...{PLOT}.querySelectorAll('.legend .traces')].find(e => e.textContent === 'dcd')"
                          ".querySelector('.legendtoggle')")
    browser.wait(f"{LINES}.length === 6")

    # Dataset menu: beta's first problem is drawn (other lines), and the problem menu lists beta's problems.
    browser.click_element(f"{PLOT}.querySelectorAll('.updatemenu-header-group')[0]")
    browser.wait(_menu_item(0, "beta"))
    browser.click_element(_menu_item(0, "beta"))
    browser.wait(f"({PLOT}.querySelector('.gtitle') || {{}}).textContent === 'beta | kernel=linear C=0.1'")
    after = _drawn(browser)
    assert len(after["paths"]) == 6 and set(after["paths"]).isdisjoint(first["paths"])
    browser.click_element(f"{PLOT}.querySelectorAll('.updatemenu-header-group')[1]")
    browser.wait(_menu_item(1, "beta | kernel=rbf C=1"))
    listed = browser.eval(f"[...{PLOT}.querySelectorAll('.updatemenu-dropdown-button')].map(b => b.textContent)")
    assert listed == ["beta | kernel=linear C=0.1", "beta | kernel=linear C=1", "beta | kernel=rbf C=1"]
    browser.click_element(_menu_item(1, "beta | kernel=rbf C=1"))
    browser.wait(f"({PLOT}.querySelector('.gtitle') || {{}}).textContent === 'beta | kernel=rbf C=1'")
    assert [name for name, _ in _drawn(browser)["legend"]] == ["smo"] and len(_drawn(browser)["paths"]) == 3

    # Metric and x menus restyle every line: test error against iterations draws other paths.
    before = _drawn(browser)["paths"]
    browser.click_element(f"{PLOT}.querySelectorAll('.updatemenu-header-group')[2]")
    browser.wait(_menu_item(2, "test error"))
    browser.click_element(_menu_item(2, "test error"))
    browser.wait(f"{PLOT}.querySelector('.ytitle').textContent === 'test error'")
    assert set(_drawn(browser)["paths"]).isdisjoint(before)
    # Axis buttons: y linear relabels the y ticks (log ticks over 0..0.5 would read 0.1, 0.2, 0.5).
    ticks = browser.eval(f"[...{PLOT}.querySelectorAll('.ytick text')].map(t => t.textContent)")
    browser.click_element(f"[...{PLOT}.querySelectorAll('.updatemenu-button')].find(b => b.textContent === 'y linear')")
    browser.wait(f"[...{PLOT}.querySelectorAll('.ytick text')].map(t => t.textContent).join() !== {','.join(ticks)!r}")
    browser.screenshot(tmp_path / "page2.png")
    assert browser.errors == []


# ------------------------------------------------------------------ a large sweep's page
def test_a_large_sweeps_page_in_headless_chromium(browser, tmp_path):
    """Past MAX_PROBLEMS problems the page holds the summaries and every problem's thinned traces:
    bounded in size (well under the 21 MB of a page with a line per fit), it draws the summary
    offline, a click on a point of it draws that problem's traces, and the slider picks any one."""
    from pipeline.report.build import build_report
    from .test_report_bounded import _sweep, _write_run
    res, tr = _sweep(400, n_folds=3)
    run = _write_run(tmp_path / "run", res, tr)
    build_report(run)
    page = run / "interactive.html"
    assert page.stat().st_size < 6_500_000
    assert not re.search(r"<script[^>]+src=", page.read_text())
    browser.errors.clear()
    browser.open(page, "document.querySelectorAll('#summary .scatterlayer .trace').length > 0 && "
                       "document.querySelectorAll('#traces .scatterlayer .trace').length > 0")
    first = browser.eval("document.getElementById('which').textContent")
    assert first.startswith("problem ") and "of 400" in first
    # A click on the summary line's middle point: its problem's traces are drawn.
    pt = browser.eval("(() => { const pts = [...document.querySelectorAll('#summary .scatterlayer .trace')].pop()"
                      ".querySelectorAll('.point'); const r = pts[Math.floor(pts.length / 2)].getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    browser.click(*pt)
    browser.wait(f"document.getElementById('which').textContent !== {first!r}")
    browser.eval("(() => { const s = document.getElementById('problem'); s.value = 399; "
                 "s.dispatchEvent(new Event('input')); })()")
    browser.wait("document.getElementById('which').textContent.startsWith('problem 400 of 400')")
    assert browser.eval("document.querySelectorAll('#traces .scatterlayer .trace').length") >= 1
    browser.screenshot(tmp_path / "large.png")
    assert browser.errors == []


NASTY = "<img src=x onerror=alert(1)>"
QUOTED = ["a\"<b>", "c'<i>d"]


@pytest.mark.slow
@pytest.mark.parametrize("n_c", [3, 30])
def test_user_strings_are_text_in_every_page(browser, tmp_path, n_c):
    """A dataset named like markup and a swept string value with quotes and angle brackets: the
    report's HTML and the interactive page (of a small run and of one past MAX_PROBLEMS), opened
    in Chromium, open no dialog and show the name as text; report.md writes no tag."""
    from pipeline.report.build import build_report
    from .test_report_bounded import _sweep, _write_run
    res, tr = _sweep(n_c, n_folds=2)
    res["dataset"] = NASTY
    res = pd.concat([res.assign(param_mode=QUOTED[0]), res.assign(param_mode=QUOTED[1],
                                                                   key=res["key"] + "b")], ignore_index=True)
    tr = pd.concat([tr, tr.assign(key=tr["key"] + "b")], ignore_index=True)
    run = _write_run(tmp_path / "run", res, tr)
    build_report(run)
    for page, ready in (("report.html", "document.body"),
                        ("interactive.html", "document.querySelectorAll('.scatterlayer .trace').length > 0")):
        browser.events.clear()
        browser.errors.clear()
        browser.open(run / page, ready)
        time.sleep(0.5)                  # an image's onerror fires once its load has failed
        browser.eval("1")                # the events that came meanwhile are read
        dialogs = [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
        assert dialogs == [], (page, dialogs)
        # The text drawn (the tables, plotly's legend, titles and menus, the page's own labels),
        # not the page's source: a script's JSON holds the name whatever is drawn.
        text = browser.eval("document.body.innerText + [...document.querySelectorAll("
                            "'.legendtext, .gtitle, .updatemenu-item-text, #which')].map(e => e.textContent).join(' ')")
        assert NASTY in text, page
        # plotly draws a small HTML dialect (<b>, <i>, <a href>): a value holding one is shown as
        # typed, not made bold, italic or a link.
        assert all(v in text for v in QUOTED), (page, [v for v in QUOTED if v not in text])
        assert browser.eval("document.querySelectorAll('img[src=x], b, i').length") == 0, page
    md = (run / "report.md").read_text()
    assert NASTY not in md and "&lt;img src=x onerror=alert(1)>" in md
    assert QUOTED[0] in md.replace("&lt;", "<")
