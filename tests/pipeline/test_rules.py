"""Rules fixed before the run, and READMEs that say what the code checks.

Each study's claims, thresholds and data declaration are data (`RULES` in pipeline/papers/<name>.py,
judged by pipeline/papers/claims.py) with a digest; a change to any of them must come with a dated
entry in the study's rule log (`CHANGES`: what changed, why, the verdicts before and after), which
the README prints. And the committed README's rule column must be the text the code generates
from those rules today: a README that says "in every fold" while the code checks something else
fails here until it is regenerated. And `claims.lint` must find nothing in a study's claims: a claim
that measures against a number the paper printed names it, and such a claim on a study with a
stand-in is a level (or says why the number is the method's on any data). No solver runs."""
import re

import pytest

from pipeline.papers import PAPERS_DIR, bertini, duros_katzman, roethel_brynda, rupnik, troyan
from pipeline.papers.claims import lint

STUDIES = {m.NAME: m for m in (bertini, duros_katzman, roethel_brynda, rupnik, troyan)}
_CELL = re.compile(r"(?<!\\)\|")


def _rule_column(readme: str) -> list[str]:
    """The rule cell of each row of a README's findings table, unescaped."""
    out = []
    for line in readme.splitlines():
        if re.match(r"^\| \d+ \| ", line) and "**" in line:
            cells = [c.strip() for c in _CELL.split(line)[1:-1]]
            out.append(cells[2].replace("\\|", "|"))
    return out


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_a_rule_change_needs_a_dated_entry(name):
    rules = STUDIES[name].RULES
    assert rules.changes, f"{name}: no dated entry in its rule log (CHANGES)"
    for c in rules.changes:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", c.date) and c.what and c.why and c.before and c.after, c
    assert [c.date for c in rules.changes] == sorted(c.date for c in rules.changes)
    assert rules.digest() == rules.changes[-1].digest, (
        f"{name}: its rules changed (digest {rules.digest()}) since its last dated entry "
        f"({rules.changes[-1].date}, digest {rules.changes[-1].digest}): add a RuleChange to CHANGES in "
        f"pipeline/papers/{name}.py saying what changed, why, and the verdicts before and after, with this digest, "
        f"and regenerate the study")


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_committed_readme_says_what_the_code_checks(name):
    rules = STUDIES[name].RULES
    text = (PAPERS_DIR / name / "README.md").read_text()
    assert _rule_column(text) == [c.rule_text() for c in rules.claims], (
        f"outputs/papers/{name}/README.md: its rule texts are not the ones pipeline/papers/{name}.py generates "
        f"now: regenerate it (python -m pipeline +experiment={name})")
    assert f"rules have digest `{rules.digest()}`" in text, f"{name}: the README is from other rules: regenerate it"
    last = rules.changes[-1]
    assert f"### {last.date} (digest `{last.digest}`)" in text and last.what in text


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_no_printed_number_is_judged_as_a_mechanism_on_a_stand_in(name):
    assert lint(STUDIES[name].RULES) == []


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_committed_readme_says_in_one_table_what_is_reproduced(name):
    text = (PAPERS_DIR / name / "README.md").read_text()
    assert "| outcome | # | the finding | why |" in text, f"{name}: regenerate its README (the summary table)"
    rows = [line for line in text.splitlines() if re.match(r"^\| (reproduced|differs|cannot be judged) \| \d+ \|", line)]
    assert len(rows) == len(STUDIES[name].RULES.claims)
