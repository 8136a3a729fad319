"""Put each committed paper reproduction into the site, at build time, and the rules they are
judged by.

Run by mkdocs-gen-files (mkdocs.yml). ``outputs/papers/<name>/README.md`` and its PNG figures
are written by the reproduction's writer (``make papers``) and committed; the site shows that
file as it is, under ``papers/<name>/``, so no number of a reproduction is ever copied into a
hand-written page (they would drift apart on the next ``make papers``). ``papers/rules.md`` is
written here from the code itself (pipeline/papers/claims.py and each study's ``RULES``): the
claim vocabulary with its thresholds, and each study's claims, data declaration and rule log,
so the page cannot say other than what the verdicts are computed by.
"""
from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "outputs" / "papers"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_page() -> str:
    import importlib

    from pipeline.papers import PAPERS as WRITERS
    from pipeline.papers import claims
    out = ["<!-- Generated from pipeline/papers/claims.py and each study's RULES by docs/gen/paper_pages.py. -->",
           "# The claim vocabulary and each study's rules\n",
           "Every finding of every reproduction is judged by one of these kinds, with the threshold below, the "
           f"same in every study. A measured statistic carries its {100 * claims.CONFIDENCE:.0f}% interval "
           "(a ratio: the geometric mean over independent repeats with Student's t on its logarithms; an accuracy "
           "difference: over paired folds, or from the test rows, Student's t on n - 1 over repeats); the verdict is "
           "**holds** when the interval lies inside the band, **differs** when it lies outside, **undecided** when it "
           f"straddles an edge or rests on fewer than {claims.MIN_REPEATS} repeats, **below detectable power** when "
           "it straddles a band narrower than itself. How the overview reads them: "
           "[Paper reproductions](index.md).\n", *claims.vocabulary_table(), ""]
    for name in sorted(WRITERS):
        rules = importlib.import_module(f"pipeline.papers.{name}").RULES
        out += [f"## {name}\n", f"Rules digest `{rules.digest()}`; the reproduction: [{name}]({name}/index.md).\n",
                "| dataset | whose | why | kept out of |", "|---|---|---|---|",
                *[f"| {row[0]} | {row[1]} | {row[2]} | "
                  f"{'; '.join(f'every {cat} claim: {why}' for cat, why in (row[3] if len(row) > 3 else ()))} |"
                  for row in rules.data], "",
                "| claim | the paper | rule |", "|---|---|---|",
                *[f"| `{c.key}` | {_cell(c.paper)} | {_cell(c.rule_text())} |" for c in rules.claims], "",
                *(["Sensitivities, declared with the rules:\n",
                   *[f"- `{x.claim}`: {x.what}" for x in rules.sensitivities], ""] if rules.sensitivities else []),
                "Rule log:\n", *[f"- {c.date} (`{c.digest}`): {c.what}" for c in rules.changes], ""]
    return "\n".join(out) + "\n"


def main() -> None:
    summary = ["* [Overview](index.md)", "* [Claim vocabulary and rules](rules.md)"]
    with mkdocs_gen_files.open("papers/rules.md", "w") as f:
        f.write(rules_page())
    for folder in sorted(p for p in PAPERS.iterdir() if (p / "README.md").is_file()):
        name = folder.name
        with mkdocs_gen_files.open(f"papers/{name}/index.md", "w") as f:
            f.write(f"<!-- Generated from outputs/papers/{name}/README.md: regenerate with make papers. -->\n")
            f.write((folder / "README.md").read_text())
        mkdocs_gen_files.set_edit_path(f"papers/{name}/index.md", f"../outputs/papers/{name}/README.md")
        for png in sorted(folder.glob("*.png")):
            with mkdocs_gen_files.open(f"papers/{name}/{png.name}", "wb") as f:
                f.write(png.read_bytes())
        summary.append(f"* [{name}]({name}/index.md)")
    with mkdocs_gen_files.open("papers/SUMMARY.md", "w") as f:
        f.write("\n".join(summary) + "\n")


main()
