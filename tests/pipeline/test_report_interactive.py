"""The interactive page (interactive.html) opened in a real headless Chromium: it draws without a
console error and offline (plotly.js inlined), a click on a solver in the legend hides its lines,
the dataset menu changes what is drawn (and the problem menu to that dataset's problems), the
metric and x menus restyle every line; a screenshot is produced. Skipped, saying so, only where
no Chromium can be found."""
import re

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
