"""The report says what it means: the best parameters beside their fold spread and the
one-standard-error choice, and the terms its text uses defined under *Terms* (report.md and
report.html, where each term's first use links to its entry)."""
import math
import re

import pandas as pd

from pipeline.report import ReportData
from pipeline.report.build import Section, terms_used, to_html, to_markdown
from pipeline.report.tables import best_params, one_se_lines

from .report_data import folds, rows, traces_for


def _data(results):
    return ReportData(results, traces_for(results), pd.DataFrame(), name="t")


def _path(C, accs, **keys):
    """A configuration of smo (rbf) at C, a fold per test accuracy in accs."""
    return folds({"solver_entry": "smo", "kernel": "rbf", "C": C, **keys}, n=len(accs), test_accuracy=accs)


def test_the_one_standard_error_choice_is_the_least_C_of_the_best_path_within_one_standard_error():
    # The best: C=1 at gamma=0.1, folds 0.8, 1.0, 0.8, 1.0: mean 0.9, std sqrt(0.04/3) = 0.11547,
    # standard error 0.11547 / 2 = 0.057735: within it, mean >= 0.842265.
    specs = (_path(10.0, [0.85] * 4, gamma=0.1) + _path(1.0, [0.8, 1.0, 0.8, 1.0], gamma=0.1)
             + _path(0.1, [0.85] * 4, gamma=0.1)           # within: 0.85 >= 0.842265
             + _path(0.01, [0.84] * 4, gamma=0.1)          # not: 0.84 < 0.842265 (within one std, 0.7845)
             + _path(0.001, [0.89] * 4, gamma=1.0))        # within, but another gamma: not the best's path
    best = best_params(_data(rows(specs))).iloc[0]
    assert (best["C"], best["gamma"], best["mean_test_score"]) == (1.0, 0.1, 0.9)
    assert math.isclose(best["std_test_score"], math.sqrt(0.04 / 3), rel_tol=1e-12)
    assert math.isclose(best["se_test_score"], math.sqrt(0.04 / 3) / 2, rel_tol=1e-12)
    assert best["configs"] == 5
    assert (best["C_1se"], best["mean_test_score_1se"]) == (0.1, 0.85)


def test_one_fold_has_no_spread_and_a_tie_at_a_smaller_C_is_the_choice():
    # One fold a configuration: no standard error; the band is the best's score itself, and a
    # smaller C that ties with it is within (>=, not >). The best of a tie is the faster: C=10.
    specs = _path(10.0, [0.9], fit_time_s=0.001) + _path(1.0, [0.9]) + _path(0.1, [0.89])
    best = best_params(_data(rows(specs))).iloc[0]
    assert best["C"] == 10.0 and math.isnan(best["se_test_score"])
    assert best["C_1se"] == 1.0 and best["mean_test_score_1se"] == 0.9


def test_the_table_says_when_a_smaller_C_is_as_good():
    specs = _path(1.0, [0.8, 1.0, 0.8, 1.0], gamma=0.1) + _path(0.1, [0.85] * 4, gamma=0.1)
    lines = one_se_lines(best_params(_data(rows(specs))))
    assert len(lines) == 1 and lines[0].startswith("- 1 of 1 best configurations have a smaller C within one "
                                                   "standard error")
    assert "smo on toy, C=0.1 at 0.85 against C=1 at 0.9" in lines[0]
    # The same C: nothing to say.
    assert one_se_lines(best_params(_data(rows(_path(1.0, [0.9, 0.8]) + _path(0.1, [0.5, 0.5]))))) == []


def _report(intro, secs):
    md = to_markdown("r", intro, secs, rel_to=__import__("pathlib").Path("."))
    return md, to_html("r", intro, secs)


def test_terms_used_are_defined_under_terms_and_no_other():
    secs = [Section("a", "Time to target", note="Seconds on the call clock of the timing fits."),
            Section("b", "Timing", table=pd.DataFrame({"solver_entry": ["liblinear"], "method": ["ladder"]})),
            Section("c", "Skipped", note="censored due point", skipped="no results")]
    assert terms_used(["A target of 1e-3."], secs) == ["target", "timing fit", "ladder", "call clock"]
    md, page = _report(["A target of 1e-3."], secs)
    terms = md.split("## Terms\n", 1)[1].split("## Not drawn", 1)[0]
    # Those the report says and no other (a skipped section's note, `censored due point`, is not read).
    assert re.findall(r"^- \*\*(.+?)\*\*", terms, re.M) == ["target", "timing fit", "ladder", "call clock"]
    assert "`docs/guide/reports.md#call-clock`" in terms
    # The page: an entry per term, and the first use of each in a paragraph links to it with its
    # sentence as hover text (once per paragraph).
    assert '<dt id="term-call-clock">call clock</dt>' in page
    note = re.search(r"<p class=note>(.*?)</p>", page).group(1)
    assert re.fullmatch(r'Seconds on the <a class=term href="#term-call-clock" title="CPU seconds of the whole '
                        r'call[^"]*">call clock</a> of the <a class=term href="#term-timing-fit" title="[^"]*">'
                        r"timing fits</a>\.", note)


def test_no_term_is_linked_inside_code_or_a_word():
    secs = [Section("a", "A", note="`ladder` ladder_cut targets target")]
    page = _report([], secs)[1]
    note = re.search(r"<p class=note>(.*?)</p>", page).group(1)
    assert note.startswith("<code>ladder</code> ladder_cut <a class=term href=\"#term-target\"")
    assert note.endswith(">targets</a> target")


def test_a_report_without_terms_has_no_terms_section():
    md, page = _report(["Nothing special."], [Section("a", "Accuracy", note="Mean over folds.")])
    assert "## Terms" not in md and 'id="terms"' not in page


def test_every_term_has_its_entry_in_the_docs():
    """Each term's anchor (report.md names it as docs/guide/reports.md#<anchor>) is an entry there."""
    from pathlib import Path
    from pipeline.report.glossary import DOCS, TERMS
    page = (Path(__file__).resolve().parents[2] / DOCS).read_text()
    ids = set(re.findall(r"\{#([\w-]+)\}", page))
    assert {anchor for _, anchor in TERMS.values()} <= ids, sorted({a for _, a in TERMS.values()} - ids)
