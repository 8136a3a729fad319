"""The report's view of a search (`search.kind` certified, heldout, path or halving;
pipeline/search/): how each search ended, the CV error lower bound against C with the points
fitted (certified, heldout, path), and the rungs (halving). Read from the run directory's search.json (`ReportData.search`), which the
search writes after each round; a grid's run has none, and these items are left out with a hint."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .common import fmt, styles
from .registry import ReportData, Skip, figure, table

HINT = "run a search (`search=path` or `search=certified` for a linear C, `search=halving` for any grid)"
# The searches over a linear C whose state holds CV errors per C and the bound over them.
C_SEARCHES = ("certified", "heldout", "path")


def state(run_dir: Path) -> dict | None:
    """The run's search.json (written by pipeline/search_run.py), None for a grid's run."""
    from ..results.searches import read_state
    return read_state(run_dir)


def _searches(data: ReportData, kind: str | None = None) -> list[dict]:
    state = data.search
    if not state:
        raise Skip("the run has no search.json (a grid's run)", HINT)
    found = [s for s in state["searches"] if kind is None or s["kind"] == kind]
    if not found:
        raise Skip(f"the run's search is {state['kind']}, not {kind}",
                   f"run `search={kind}`")
    return found


def _costs(data: ReportData, by_round: bool = False) -> dict:
    """What each search's fits cost, summed by the engine over the run's results (every fit, an
    error too): {(dataset, entry[, round]): (fits, iterations, fit seconds)}."""
    by = ["dataset", "solver_entry"] + (["search_round"] if by_round else [])
    has = data.types("results")
    agg = {"fits": "count(*)",
           "iterations": "coalesce(sum(num(n_iter)), 0)" if "n_iter" in has else "NULL",
           "seconds": "coalesce(fsum(num(fit_time_s)), 0)" if "fit_time_s" in has else "NULL"}
    rows = data.summary(by, agg, name="results")
    return {tuple(r[:len(by)]): r[len(by):] for r in rows[by + list(agg)].itertuples(index=False)}


def _outcome_lines(data: ReportData) -> list[str]:
    out = []
    for s in _searches(data):
        if s["kind"] in C_SEARCHES and s.get("reason"):
            out.append(f"- {s['solver_entry']} on {s['dataset']}: {s['reason']}.")
    return out


@table("search", "Search", needs=("search_round",), hint=HINT, lines=_outcome_lines,
       note="Each search's rounds, fits (every fit of every round is a row of the results, its round in "
            "`search_round`) and outcome: for a certified search the best CV error found, the lower bound's "
            "minimum over the whole C range and whether their difference is within epsilon; for LIBLINEAR's C "
            "search (path) the C values it walked, its best C and CV accuracy and the bound's minimum over the "
            "walked range; for halving the candidate its last rung chose.")
def search_table(data: ReportData) -> pd.DataFrame:
    rows = []
    costs = _costs(data)
    for s in _searches(data):
        n, iters, _ = costs.get((s["dataset"], s["solver_entry"]), (0, 0, 0.0))
        row = {"dataset": s["dataset"], "solver entry": s["solver_entry"], "search": s["kind"],
               "rounds": len(s.get("rounds") or s.get("rungs") or []), "fits": int(n),
               "iterations": int(iters) if iters is not None and iters == iters else None}
        if s["kind"] in ("certified", "heldout"):
            st = s["settings"]
            row.update({"C range": f"[{fmt(st['C_min'])}, {fmt(st['C_max'])}]", "epsilon": st["epsilon"],
                        "best C": s.get("best_C"), "best CV error": s.get("best_error"),
                        "bound minimum": s.get("bound_min"), "at C": s.get("bound_min_C"),
                        "certified": "yes" if s.get("certified") else "no"})
            if s["kind"] == "heldout":
                row.update({"certified on": "the first fold", "CV error at best C": s.get("cv_error_at_best")})
        elif s["kind"] == "path":
            walked = s.get("walked") or []
            row.update({"C range": f"[{fmt(walked[0])}, {fmt(walked[-1])}]" if walked else "",
                        "C values": len(walked), "stopped": "LIBLINEAR's rule" if s.get("stopped_at") else "C_max",
                        "best C": s.get("best_C"), "CV accuracy": s.get("cv_accuracy"),
                        "best CV error": s.get("best_error"), "bound minimum": s.get("bound_min"),
                        "at C": s.get("bound_min_C")})
        else:
            best = s.get("best") or {}
            row.update({"resource": s["resource"], "factor": s["factor"],
                        "best": ", ".join(f"{k}={fmt(v)}" for k, v in (best.get("point") or {}).items()),
                        "best CV error": best.get("cv_error")})
        rows.append(row)
    return pd.DataFrame(rows)


@table("halving_rungs", "Halving rungs", needs=("search_round",), hint=HINT,
       note="Each rung of a successive-halving search: its resource (max_iter: iterations beyond the last rung's, "
            "each candidate warm-started from its own last model; tol: the tolerance), how many candidates ran and "
            "what they cost (fits, solver iterations and fit seconds summed), and the best of them.")
def rungs_table(data: ReportData) -> pd.DataFrame:
    rows = []
    costs = _costs(data, by_round=True)
    for s in _searches(data, "halving"):
        for r in s["rungs"]:
            done = [c for c in r["candidates"] if c["cv_error"] is not None]
            best = min(done, key=lambda c: c["cv_error"]) if done else None
            n, iters, seconds = next((v for k, v in costs.items() if k[:2] == (s["dataset"], s["solver_entry"])
                                      and _same_round(k[2], r["rung"])), (0, 0, 0.0))
            rows.append({"dataset": s["dataset"], "solver entry": s["solver_entry"], "rung": r["rung"],
                         s["resource"]: r["resource"], "candidates": r["n_candidates"], "fits": int(n),
                         "iterations": int(iters), "fit time (s)": float(seconds),
                         "best": _point_text(best["point"]) if best else "",
                         "best CV error": best["cv_error"] if best else None})
    return pd.DataFrame(rows)


@table("halving_candidates", "Halving candidates", needs=("search_round",), hint=HINT,
       note="Every candidate of every rung with its mean CV error over the folds, best first, and whether it went "
            "on to the next rung.")
def candidates_table(data: ReportData) -> pd.DataFrame:
    rows = []
    for s in _searches(data, "halving"):
        rungs = s["rungs"]
        for i, r in enumerate(rungs):
            nxt = {_point_text(c["point"]) for c in rungs[i + 1]["candidates"]} if i + 1 < len(rungs) else set()
            for c in sorted(r["candidates"], key=lambda c: (c["cv_error"] is None, c["cv_error"] or 0.0)):
                rows.append({"dataset": s["dataset"], "solver entry": s["solver_entry"], "rung": r["rung"],
                             "candidate": _point_text(c["point"]), "CV error": c["cv_error"],
                             "promoted": "yes" if _point_text(c["point"]) in nxt else ""})
    return pd.DataFrame(rows)


def _same_round(value, rung) -> bool:
    """A results row's search_round (a number, or its text in a table of mixed kinds) is the rung."""
    try:
        return float(value) == float(rung)
    except (TypeError, ValueError):
        return False


def _point_text(point: dict) -> str:
    return ", ".join(f"{k}={fmt(v)}" for k, v in point.items())


@figure("search_bound", "CV error lower bound against C", needs=("search_round",), hint=HINT,
        note="The step line is the lower bound on the CV error of the exact solution at each C (Shibagaki et al. "
             "2015), from every fit so far; the dots are the CV errors of the C values fitted, coloured by round. "
             "A certified search is certified once the best dot is within epsilon of the line's lowest point over "
             "the whole range (the dashed line is the best CV error less epsilon: where the bound dips under it, a "
             "better C may hide); a path search's line is what its fits certify between its doublings.")
def search_bound(data: ReportData):
    found = [s for s in _searches(data) if s["kind"] in C_SEARCHES and s.get("bound")]
    if not found:
        raise Skip("no C search reached its first decision")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(found), figsize=(6.5 * len(found), 4.2), squeeze=False)
    for ax, s in zip(axes.ravel(), found):
        edges = np.exp(np.asarray(s["bound"]["log_breaks"]))
        lb = np.asarray(s["bound"]["between"])
        ax.stairs(lb, edges, baseline=None, color="0.2", linewidth=1.0, label="lower bound of the CV error")
        errors = pd.DataFrame(s["errors"])
        n_rounds = max(len(s["rounds"]), 1)
        cmap = matplotlib.colormaps["viridis"]
        sc = ax.scatter(errors["C"], errors["cv_error"], c=errors["round"], cmap=cmap, vmin=0,
                        vmax=max(n_rounds - 1, 1), s=22, zorder=3, label="CV error of a C fitted")
        eps = s["settings"].get("epsilon")
        if eps is not None:
            ax.axhline(s["best_error"] - eps, color=styles(2)[1]["color"], linestyle="--", linewidth=1,
                       label=f"best CV error - epsilon ({fmt(eps)})")
        ax.scatter([s["best_C"]], [s["best_error"]], marker="*", s=160, color="crimson", zorder=4,
                   label=f"best C = {fmt(s['best_C'])}")
        ax.set_xscale("log")
        ax.set_xlabel("C")
        ax.set_ylabel("CV error")
        verdict = ("LIBLINEAR's C search" if s["kind"] == "path" else
                   "certified" if s.get("certified") else "not certified")
        ax.set_title(f"{s['solver_entry']} on {s['dataset']}: {verdict}\n{len(errors)} C values, "
                     f"{len(s['rounds'])} rounds; bound min {fmt(s['bound_min'])}", fontsize=9)
        ax.grid(True, alpha=0.3)
        top = float(np.nanmax(errors["cv_error"])) if len(errors) else 1.0
        ax.set_ylim(0, min(1.0, 1.1 * max(top, float(lb.max(initial=0.0)))) or 1.0)
        if n_rounds > 1:
            fig.colorbar(sc, ax=ax, label="round")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False, ncols=2)
    return fig


@figure("halving_cv_error", "Halving: CV error by rung", needs=("search_round",), hint=HINT,
        note="Each candidate's mean CV error at each rung it ran (x: the rung's resource); a line joins a "
             "candidate's rungs, and the last rung's best is starred.")
def search_rungs(data: ReportData):
    found = _searches(data, "halving")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(found), figsize=(6.5 * len(found), 4.2), squeeze=False)
    for ax, s in zip(axes.ravel(), found):
        by: dict = {}
        for r in s["rungs"]:
            for c in r["candidates"]:
                if c["cv_error"] is not None:
                    by.setdefault(_point_text(c["point"]), []).append((r["resource"], c["cv_error"]))
        if not by:
            raise Skip("no rung has a CV error on every fold")
        for name, pts in by.items():
            xs, ys = zip(*pts)
            ax.plot(xs, ys, color="0.6" if len(pts) == 1 else None, marker="o", markersize=3,
                    linewidth=0.8, alpha=0.7 if len(pts) == 1 else 1.0,
                    label=name if len(pts) == len(s["rungs"]) else None)
        best = s.get("best")
        if best:
            ax.scatter([s["rungs"][-1]["resource"]], [best["cv_error"]], marker="*", s=160, color="crimson",
                       zorder=4)
        values = [r["resource"] for r in s["rungs"]]
        if min(values) > 0 and max(values) / min(values) > 5:
            ax.set_xscale("log")
        if s["resource"] == "tol":
            ax.invert_xaxis()
        ax.set_xlabel(f"{s['resource']} of the rung" + (" (tighter to the right)" if s["resource"] == "tol" else ""))
        ax.set_ylabel("CV error")
        ax.set_title(f"{s['solver_entry']} on {s['dataset']}: "
                     + " -> ".join(str(r["n_candidates"]) for r in s["rungs"]) + " candidates", fontsize=9)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False, ncols=2)
    return fig
