"""The report's terms, defined where a reader meets them: a report lists, under *Terms*, those its
own text uses (its intro, the notes and lines of its sections, its tables' headers and cells), each
with one sentence and the anchor of its longer entry in the docs (docs/guide/reports.md,
*Glossary*); report.html links a term's first use in each paragraph to its entry, the sentence as
hover text."""
from __future__ import annotations

import re

DOCS = "docs/guide/reports.md"

# term -> (one sentence, the anchor of docs/guide/reports.md's entry). The order is the section's.
TERMS: dict[str, tuple[str, str]] = {
    "target": ("the relative suboptimality (P - f*)/|f*| every speed comparison times a fit to (`report.target`, "
               "default 1e-3); a fit that ends above it has `not reached`, never a time", "target"),
    "f*": ("the problem's optimal objective, certified by reference solves (their duality gap says how finely: "
           "the certainty below which no suboptimality is shown)", "f-star"),
    "timing fit": ("a fit of the sweep again, started cold and traced at every due point, so that solvers are "
                   "timed to the target on one problem, one start and one clock", "timing-fit"),
    "due point": ("a point where a timing fit records its objective, about 10 a decade of iterations, the "
                  "solver's clock paused meanwhile", "due-point"),
    "ladder": ("how a library (LIBLINEAR, LIBSVM, SGD through scikit-learn: one call, no trace) is timed: cold "
               "solves capped at 1, 2, 3, 4, 6, 8, ... iterations, each a point of its curve", "ladder"),
    "censored": ("a time the run stopped measuring before the target was reached (a ladder cut by its budget): "
                 "shown as not reached within that budget, never as a time", "censored"),
    "call clock": ("CPU seconds of the whole call from the fold's arrays to a model, the setup of our problem "
                   "and a library's input checks included: the clock of every speed comparison", "call-clock"),
    "solver clock": ("the solver's own wall seconds from a built problem to its model, trace points and "
                     "certificates excluded", "solver-clock"),
    "task clock": ("the task's seconds: loading the fold, the fit, its certificates and scores", "task-clock"),
    "own stop": ("where a solver's own stopping rule ended a fit (its tol, max_iter or epochs): rules differ, so "
                 "times to the own stop are not compared", "own-stop"),
    "warm start": ("a fit started from the previous C's solution along its C path (dcd, smo); compared for "
                   "accuracy, never for speed against cold ones", "warm-start"),
    "one-standard-error": ("the smallest C on the best configuration's C path whose mean test accuracy is within "
                           "one standard error (std over folds / sqrt(folds)) of the best's", "one-standard-error"),
}

# A term as a word of its own, or its plural (`timing fits`; not a piece of `ladder_cut` or
# `t_target_s`), any case.
_PATTERN = re.compile(r"(?<![\w-])(" + "|".join(re.escape(t) for t in sorted(TERMS, key=len, reverse=True))
                      + r")s?(?![\w-])", re.IGNORECASE)


def anchor(term: str) -> str:
    """The id of a term's entry in report.html (and of its docs entry: `DOCS#<anchor>`)."""
    return TERMS[term][1]


def find(text: str) -> list[str]:
    """The terms `text` uses, in TERMS' spelling, each once."""
    canon = {t.lower(): t for t in TERMS}
    return list(dict.fromkeys(canon[m.group(1).lower()] for m in _PATTERN.finditer(str(text))))


def used(texts) -> list[str]:
    """The terms any of `texts` uses, in TERMS' order."""
    found = set()
    for text in texts:
        found.update(find(text))
    return [t for t in TERMS if t in found]


def lines(terms: list[str]) -> list[str]:
    """The *Terms* section's lines: each term, its sentence and its docs entry."""
    return [f"- **{t.replace('*', chr(92) + '*')}**: {TERMS[t][0]} (`{DOCS}#{TERMS[t][1]}`)." for t in terms]


def link_first(escaped: str, terms: set[str], done: set[str] | None = None) -> str:
    """HTML text (escaped already, no markup in it) with the first use of each of `terms` not
    in `done` made a link to its entry in the page, its sentence as hover text; `done` gets the
    terms linked."""
    import html
    if not terms:
        return escaped
    canon = {t.lower(): t for t in TERMS}
    done = set() if done is None else done

    def one(m):
        term = canon[m.group(1).lower()]
        if term not in terms or term in done:
            return m.group(0)
        done.add(term)
        hover = TERMS[term][0].replace("`", "")
        return f'<a class=term href="#term-{anchor(term)}" title="{html.escape(hover)}">{m.group(0)}</a>'
    return _PATTERN.sub(one, escaped)
