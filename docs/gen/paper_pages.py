"""Put each committed paper reproduction into the site, at build time.

Run by mkdocs-gen-files (mkdocs.yml). ``outputs/papers/<name>/README.md`` and its PNG figures
are written by the reproduction's writer (``make papers``) and committed; the site shows that
file as it is, under ``papers/<name>/``, so no number of a reproduction is ever copied into a
hand-written page (they would drift apart on the next ``make papers``).
"""
from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "outputs" / "papers"


def main() -> None:
    summary = ["* [Overview](index.md)"]
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
