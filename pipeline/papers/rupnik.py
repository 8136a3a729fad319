"""rupnik: J. Rupnik, "Stochastic Subgradient Approach for Solving Linear Support Vector Machines -
an Overview", Jozef Stefan Institute, 2008. Writes Section 4.3 (Pegasos's relative gap to a
certified optimum: iterations and seconds to 0.3% and 0.1%), Figures 2-4 (random starts, test
error against iterations, k against T at fixed kT with and without advancing t on steps without
violators), each of the paper's findings marked holds or differs, from a run of
conf/experiment/rupnik.yaml.

The findings are functions of three summary tables built from the run's Parquet tables (so they
can be checked on hand-made ones): `convergence` (one row per dataset x entry `pegasos` / `dcd`),
`starts` (one row per dataset x sampling seed: how far the random starts' objectives ever differ),
and `k_vs_T` (one row per dataset x lazy_t x kT x k).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.build import load
from ..report.common import fmt, styles
from ..report.figures import _decorate, _log_ticks, _panels, _value_ticks, figure_legend
from ..report.registry import ReportData, Skip
from ..report.tables import to_targets
from . import paper
from .common import (Finding, draw_figures, figure_lines, header_lines, not_comparable, save_figures, table_lines,
                     with_costs)

NAME = "rupnik"
PEGASOS, EXACT, STARTS, KT = "pegasos", "dcd", "pegasos_starts", "pegasos_kT"
TARGETS = (3e-3, 1e-3)                    # Section 4.3: within 0.3% and 0.1% of the optimum
# Section 4.3: k = 8000, lambda = 1e-4; 200 iterations (9.2 CPU seconds) to 0.3%, 560 to 0.1%;
# SVMlight's optimum took about four hours of CPU time.
THEIRS_IT = {3e-3: 200, 1e-3: 560}
THEIRS_S_03 = 9.2
THEIRS_EXACT_H = 4.0
# Section 4.4 / Figure 3: 5.8% test error within 50 iterations; SVMlight 5.6%.
THEIRS_ERR_50, THEIRS_ERR_EXACT, AT_IT = 5.8, 5.6, 50
# Verdict thresholds, stated in the claims.
IT_FACTOR = 2.0          # iterations to a target "as theirs": within a factor 2 of their count
ERR_PP = 0.5             # Pegasos at 50 iterations "at the exact solver's error": within 0.5 pp
SLOW_FACTOR = 2.0        # "k too small slows convergence": its gap at least 2x the best k's
START_SPREAD = 0.01      # "independent of the start": final objectives within 1% of each other
PAPER_DATA = {"rcv1_full": "RCV1-like (RCV1's size)", "rotten_tomatoes": "rotten_tomatoes (real text)"}


def _name(ds: str) -> str:
    return PAPER_DATA.get(ds, ds)


# ------------------------------------------------------------------------------ summaries
def _fits(data: ReportData, entry: str) -> pd.DataFrame:
    return data.fits[data.fits["solver_entry"] == entry]


def _at_iteration(tr: pd.DataFrame, col: str, it: int) -> tuple[float, float]:
    """(iteration, value) of the last trace point at or before `it` with a value."""
    tr = tr[(tr["iteration"] <= it) & tr[col].notna()]
    if tr.empty:
        return math.nan, math.nan
    last = tr.sort_values("iteration").iloc[-1]
    return float(last["iteration"]), float(last[col])


def convergence(data: ReportData) -> pd.DataFrame:
    """One row per dataset x entry (pegasos, dcd): status, iterations and solver seconds, the final
    (P - f*)/|f*|, how well f* is known, the first trace iteration and second at which the gap is
    within 0.3% and 0.1%, the final test error and (pegasos) the test error at 50 iterations, in %."""
    fits = data.fits[data.fits["solver_entry"].isin((PEGASOS, EXACT))]
    cols = ["dataset", "solver_entry", "status", "n_iter", "fit_time_s", "rel_subopt", "f_star_rel_gap",
            "f_star_status", "f_star_solver"] + [f"{p}_{e:g}" for e in TARGETS for p in ("it", "t")] + [
            "test_err", "err_it", "test_err_at", "n_train", "n_test", "lambda", "k", "n_updates"]
    if fits.empty or "f_star" not in fits.columns:
        return pd.DataFrame(columns=cols)
    fits = fits[fits["f_star"].notna()]
    hit = to_targets(fits, data.traces, TARGETS).set_index("key")
    by_key = {k: g for k, g in data.traces.groupby("key")}
    rows = []
    for r in fits.itertuples(index=False):
        tr = by_key.get(r.key, pd.DataFrame(columns=["iteration", "test_error"]))
        err_it, err = (_at_iteration(tr, "test_error", AT_IT) if "test_error" in tr.columns
                       else (math.nan, math.nan))
        row = {"dataset": r.dataset, "solver_entry": r.solver_entry, "status": r.status, "n_iter": r.n_iter,
               "fit_time_s": r.fit_time_s, "rel_subopt": r.rel_suboptimality,
               "f_star_rel_gap": r.f_star_rel_gap, "f_star_status": r.f_star_status,
               "f_star_solver": r.f_star_solver, "test_err": 100.0 * (1.0 - r.test_accuracy),
               "err_it": err_it, "test_err_at": 100.0 * err, "n_train": r.n_train, "n_test": r.n_test,
               "lambda": r.lambda_pegasos,
               # The work of each: Pegasos reads k examples per iteration, dcd one per coordinate update.
               "k": _number(getattr(r, "param_k", math.nan)), "n_updates": _number(getattr(r, "info_n_updates", math.nan))}
        for e in TARGETS:
            row[f"it_{e:g}"] = hit.loc[r.key, f"it_{e:g}"]
            row[f"t_{e:g}"] = hit.loc[r.key, f"t_{e:g}"]
        rows.append(row)
    return pd.DataFrame(rows, columns=cols).sort_values(["dataset", "solver_entry"]).reset_index(drop=True)


def _number(v) -> float:
    v = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
    return float(v) if pd.notna(v) else math.nan


def starts(data: ReportData) -> pd.DataFrame:
    """One row per dataset x sampling seed (random_state) of the random-start runs: how many starts
    (init_seed), the largest relative difference of their objectives at any common trace
    iteration, and the final objectives' spread (max - min) / min."""
    fits = _fits(data, STARTS)
    cols = ["dataset", "random_state", "starts", "max_rel_diff", "final_spread", "final_P", "final_gap"]
    if fits.empty or "param_init_seed" not in fits.columns:
        return pd.DataFrame(columns=cols)
    rows = []
    for (ds, rs), grp in fits.groupby(["dataset", "param_random_state"]):
        tr = data.traces[data.traces["key"].isin(grp["key"])]
        P = tr.pivot_table(index="iteration", columns="key", values="primal").dropna()
        diff = ((P.max(axis=1) - P.min(axis=1)) / P.min(axis=1).abs()).max() if len(P) else math.nan
        final = grp["primal_objective"].astype(float)
        gap = grp["rel_suboptimality"].astype(float).median() if "rel_suboptimality" in grp.columns else math.nan
        rows.append({"dataset": ds, "random_state": int(rs), "starts": grp["param_init_seed"].nunique(),
                     "max_rel_diff": float(diff), "final_spread": float((final.max() - final.min()) / abs(final.min())),
                     "final_P": float(final.median()), "final_gap": float(gap)})
    return pd.DataFrame(rows, columns=cols)


def k_vs_T(data: ReportData) -> pd.DataFrame:
    """One row per dataset x lazy_t x epochs (kT = epochs x n_train examples drawn) x k: T, the
    final (P - f*)/|f*|, solver seconds."""
    fits = _fits(data, KT)
    cols = ["dataset", "lazy_t", "epochs", "kT", "k", "T", "rel_subopt", "time_s", "steps_t"]
    if fits.empty or "param_k" not in fits.columns:
        return pd.DataFrame(columns=cols)
    info_t = pd.to_numeric(fits["info_t"], errors="coerce") if "info_t" in fits.columns else np.nan
    out = pd.DataFrame({
        # param_lazy_t is a str column ("True", "False", "nan" for the other entries)
        "dataset": fits["dataset"], "lazy_t": fits["param_lazy_t"].astype(str) == "True",
        "epochs": pd.to_numeric(fits["param_epochs"]).astype(int), "k": pd.to_numeric(fits["param_k"]).astype(int),
        "T": pd.to_numeric(fits["info_T"], errors="coerce"), "rel_subopt": fits["rel_suboptimality"].astype(float),
        "time_s": fits["fit_time_s"].astype(float), "steps_t": info_t})
    out["kT"] = out["epochs"] * fits["n_train"].astype(int)
    return out[cols].sort_values(["dataset", "lazy_t", "epochs", "k"]).reset_index(drop=True)


# ------------------------------------------------------------------------------ findings
def _rows(conv: pd.DataFrame, entry: str) -> pd.DataFrame:
    return conv[conv["solver_entry"] == entry]


def _certified(row) -> bool:
    """f* known well enough to judge a 0.1% gap (its own relative gap under a tenth of it)."""
    return row["f_star_status"] == "converged" and row["f_star_rel_gap"] <= TARGETS[-1] / 10


def _when(row, eps) -> str:
    it, t = row[f"it_{eps:g}"], row[f"t_{eps:g}"]
    return "not reached" if not math.isfinite(it) else f"{it:.0f} iterations, {t:.2f} s"


def finding_gap_iterations(conv) -> Finding:
    claim = (f"with k = 8000, lambda = 1e-4 Pegasos is within 0.3% of the optimum after 200 iterations (9.2 s) and "
             f"within 0.1% after 560 (Section 4.3; checked: both reached, in at most {IT_FACTOR:g}x their iterations)")
    rows = _rows(conv, PEGASOS)
    if rows.empty:
        return Finding(claim, "no pegasos fit with a certified f*", None, "the run lacks the entry or its reference")
    parts, off, uncertain = [], [], []
    for r in rows.to_dict("records"):
        parts.append(f"{_name(r['dataset'])}: 0.3% at {_when(r, 3e-3)}; 0.1% at {_when(r, 1e-3)}")
        if not _certified(r):
            uncertain.append(r["dataset"])
        elif not all(r[f"it_{e:g}"] <= IT_FACTOR * THEIRS_IT[e] for e in TARGETS):
            off.append(r)
    if uncertain:
        return Finding(claim, "; ".join(parts), None, "f* is not certified to 0.01% on " + ", ".join(uncertain))
    # The same lambda is a weaker regularization on fewer rows: C = 1/(lambda n) grows as n shrinks.
    why = "; ".join(f"{_name(r['dataset'])} needs more than {IT_FACTOR:g}x their iterations (final gap "
                    f"{fmt(r['rel_subopt'])} after {r['n_iter']:.0f}; lambda = {fmt(r['lambda'])} is C = 1/(lambda n) = "
                    f"{fmt(1 / (r['lambda'] * r['n_train']))} on its {r['n_train']:,.0f} rows, against 0.01429 on "
                    "RCV1's 700,000)" for r in off)
    return Finding(claim, "; ".join(parts), not off, why)


def finding_exact_is_slow(conv) -> Finding:
    """Judged on work, not seconds: the examples Pegasos reads to 0.1% (k per iteration) against
    dcd's coordinate updates to the certified optimum (one example each, `info_n_updates`). Both
    cost one sparse row product and update, so the count is the time a single core spends, and
    it does not move with the machine's load (one timing of each was all the run had)."""
    claim = (f"the high-precision solver is the slow one: SVMlight took about {THEIRS_EXACT_H:g} hours for the "
             f"optimum, Pegasos {THEIRS_S_03:g} s to 0.3% (Section 4.3; checked: Pegasos reaches 0.1% with less "
             "work than the exact solver needs to certify the optimum)")
    rule = RULES["exact_is_slow"]
    parts, slower, unknown = [], [], []
    for ds in sorted(set(conv["dataset"])):
        p, x = _rows(conv, PEGASOS), _rows(conv, EXACT)
        p, x = p[p["dataset"] == ds], x[x["dataset"] == ds]
        if p.empty or x.empty:
            continue
        p, x = p.iloc[0], x.iloc[0]
        it_peg, t_peg = p[f"it_{TARGETS[-1]:g}"], p[f"t_{TARGETS[-1]:g}"]
        work_peg = p.get("k", math.nan) * it_peg
        work_x = x.get("n_updates", math.nan)
        parts.append(f"{_name(ds)}: dcd certified the optimum ({x['status']}, relative gap {fmt(x['f_star_rel_gap'])}) "
                     f"in {x['n_iter']:.0f} passes, {_work(work_x)} coordinate updates ({x['fit_time_s']:.2f} s); "
                     "Pegasos to 0.1% " + ("not reached" if not math.isfinite(it_peg) else
                                           f"after {it_peg:.0f} iterations, {_work(work_peg)} examples ({t_peg:.2f} s)"))
        if x["status"] == "converged" and math.isfinite(it_peg) and not (math.isfinite(work_peg)
                                                                          and math.isfinite(work_x)):
            unknown.append(ds)
        elif x["status"] != "converged" or not rule_exact_slower(work_peg, work_x):
            slower.append(ds)
    if not parts:
        return Finding(claim, "no dataset has both pegasos and dcd", None, "the run lacks these entries", rule)
    if unknown and not slower:
        return Finding(claim, "; ".join(parts), None, "the work counts (pegasos k, dcd n_updates) are missing on "
                       + ", ".join(_name(d) for d in unknown), rule)
    why = ("" if not slower else
           "an exact solve is not hours here: LIBLINEAR's dual coordinate descent (dcd) certifies this problem "
           "(C = 1/(lambda n) is small, so the dual box is tight) in fewer example visits than Pegasos needs to "
           "get to 0.1%, on " + ", ".join(_name(d) for d in slower) + "; the four hours were SVMlight's, a "
           "decomposition method for kernels, not the problem's")
    return Finding(claim, "; ".join(parts), not slower, why, rule)


def rule_exact_slower(pegasos: float, exact: float) -> bool:
    """ "The exact solver is the slow one": Pegasos's cost to 0.1% under the exact solver's to its
    optimum (examples read against coordinate updates; or seconds, as the paper gives them)."""
    return bool(pegasos < exact)


def _work(n: float) -> str:
    return "?" if not math.isfinite(n) else f"{n:,.0f}"


def finding_test_error(conv) -> Finding:
    claim = (f"test error reaches the exact solver's level early: {THEIRS_ERR_50:g}% within {AT_IT} iterations against "
             f"{THEIRS_ERR_EXACT:g}% for SVMlight (Figure 3; checked: within {ERR_PP:g} pp of the exact solver's)")
    parts, off = [], []
    for ds in sorted(set(conv["dataset"])):
        p, x = _rows(conv, PEGASOS), _rows(conv, EXACT)
        p, x = p[p["dataset"] == ds], x[x["dataset"] == ds]
        if p.empty or x.empty or not math.isfinite(p.iloc[0]["test_err_at"]):
            continue
        p, x = p.iloc[0], x.iloc[0]
        parts.append(f"{_name(ds)}: Pegasos {p['test_err_at']:.2f}% at iteration {p['err_it']:.0f}, "
                     f"{p['test_err']:.2f}% at {p['n_iter']:.0f}; dcd {x['test_err']:.2f}% "
                     f"({x['n_test']:.0f} test rows)")
        if p["test_err_at"] - x["test_err"] > ERR_PP:
            off.append(ds)
    if not parts:
        return Finding(claim, "no test-error trace of pegasos beside a dcd fit", None,
                       "run with run.trace_test_error=true and both entries")
    return Finding(claim, "; ".join(parts), not off,
                   "" if not off else f"Pegasos at {AT_IT} iterations is more than {ERR_PP:g} pp above the exact "
                   "solver on " + ", ".join(_name(d) for d in off))


def finding_starts(st) -> Finding:
    claim = ("the objective curve is more or less independent of the random start w_1 (Figure 2; checked: final "
             f"objectives of the starts within {100 * START_SPREAD:g}% of each other, the batches the same)")
    if st.empty:
        return Finding(claim, "no run from more than one start", None, "the run lacks pegasos_starts")
    worst = st["final_spread"].max()
    ours = (f"{int(st['starts'].max())} starts x {st.groupby('dataset')['random_state'].nunique().max()} batch seeds "
            f"on each of {st['dataset'].nunique()} dataset(s): the starts' objectives differ by at most "
            f"{fmt(float(st['max_rel_diff'].max()))} (relative) at any traced iteration; final spread " + ", ".join(
                f"{fmt(float(g['final_spread'].max()))} ({_name(d)})" for d, g in st.groupby("dataset")))
    holds = bool(worst <= START_SPREAD)
    apart = st[st["final_spread"] > START_SPREAD].groupby("dataset")[["final_spread", "final_gap"]].max()
    why = "" if holds else "; ".join(
        f"on {_name(d)} the starts end {100 * r.final_spread:.0f}% apart on the same batches, where Pegasos itself "
        f"ends {fmt(float(r.final_gap))} above f* (relative): the start is forgotten only as the run converges"
        for d, r in apart.iterrows())
    # w_2 = (1 - eta_1 lambda) w_1 + ... with eta_1 lambda = 1: the start survives step 1 only in
    # which examples of the first batch it puts inside the margin.
    if st["max_rel_diff"].max() < 1e-12:
        ours += ("; the curves coincide from step 1 on: 1 - eta_1 lambda = 0 erases w_1, and every start put the "
                 "same examples of the first batch inside the margin")
    else:
        ours += ("; they differ early (w_1 decides which examples of the first batch violate the margin, "
                 "then survives only in that first step's 1/t share)")
    by_batch = st.groupby("dataset")["final_P"].agg(lambda p: (p.max() - p.min()) / abs(p.min()))
    if (st.groupby("dataset")["random_state"].nunique() > 1).any():
        ours += "; for scale, other batches (random_state) move the final objective by " + ", ".join(
            f"{fmt(float(v))} ({_name(d)})" for d, v in by_batch.items())
    return Finding(claim, ours, holds, why)


def _per_kT(kt: pd.DataFrame, lazy: bool):
    """(dataset, epochs, kT, rows by k) of the t-advancing (or lazy) runs, each at 2+ values of k."""
    sub = kt[kt["lazy_t"] == lazy]
    for (ds, ep), g in sub.groupby(["dataset", "epochs"]):
        if g["k"].nunique() > 1:
            yield ds, ep, int(g["kT"].iloc[0]), g.sort_values("k")


def _k_sweeps(kt) -> list[dict]:
    """Per dataset and kT of the t-advancing runs: the smallest k's row, the best k's, the worst
    k's, and the spread of the final gaps over k (worst / best)."""
    out = []
    for ds, _, kT, g in _per_kT(kt, False):
        best, worst = g.loc[g["rel_subopt"].idxmin()], g.loc[g["rel_subopt"].idxmax()]
        out.append({"where": f"{_name(ds)} kT={fmt(float(kT))}", "small": g.iloc[0], "best": best, "worst": worst,
                    "spread": worst["rel_subopt"] / best["rel_subopt"]})
    return out


NO_K_SWEEP = ("no k sweep at fixed kT", None, "the run lacks pegasos_kT")


def finding_small_k_slow(kt) -> Finding:
    claim = ("at fixed kT, a too small k slows convergence (Figure 4; checked: the smallest k's final gap is at "
             f"least {SLOW_FACTOR:g}x the best k's, at every kT)")
    sweeps = _k_sweeps(kt)
    if not sweeps:
        return Finding(claim, *NO_K_SWEEP)
    parts, off = [], []
    for c in sweeps:
        small, best = c["small"], c["best"]
        ratio = small["rel_subopt"] / best["rel_subopt"]
        parts.append(f"{c['where']}: k={small['k']} {fmt(small['rel_subopt'])} against k={best['k']} "
                     f"{fmt(best['rel_subopt'])} ({ratio:.1f}x)")
        if not ratio >= SLOW_FACTOR:
            off.append(c["where"])
    return Finding(claim, "; ".join(parts), not off,
                   "" if not off else "the smallest k is not that much slower at " + ", ".join(off))


def finding_only_kT_matters(kt) -> Finding:
    claim = ("Shalev-Shwartz et al.: only kT matters, k itself does not (quoted in 4.5; checked: at every kT the "
             f"final gaps over k within a factor {SLOW_FACTOR:g})")
    sweeps = _k_sweeps(kt)
    if not sweeps:
        return Finding(claim, *NO_K_SWEEP)
    ours = "; ".join(f"{c['where']}: max/min over k = {c['spread']:.1f}" for c in sweeps)
    off = [c for c in sweeps if not c["spread"] <= SLOW_FACTOR]
    why = ""
    if off:
        c = off[0]
        worst = c["worst"]
        why = f"k matters at fixed kT (e.g. {c['where']}: worst at k={worst['k']}, T={worst['T']:.0f}"
        if worst["k"] > c["best"]["k"]:
            why += ("): too few steps for the 1/(lambda t) schedule, whose error falls with T, not with the batch; "
                    "the small k are not the slow ones here")
        else:
            why += ("): at small k most draws have no violator once the training error is a few percent, yet t "
                    "advances and the step shrinks (rupnik 4.5)")
    return Finding(claim, ours, not off, why)


def finding_larger_kT_better(kt) -> Finding:
    claim = "curves with larger kT lie below those with smaller kT (Figure 4: more examples, lower objective)"
    sub = kt[~kt["lazy_t"]]
    if sub.empty or sub["epochs"].nunique() < 2:
        return Finding(claim, "fewer than two kT", None, "the run lacks pegasos_kT")
    bad = []
    for (ds, k), g in sub.groupby(["dataset", "k"]):
        s = g.sort_values("epochs")["rel_subopt"].to_numpy()
        if np.any(np.diff(s) > 0):
            bad.append(f"{_name(ds)} k={k}")
    n = sub.groupby(["dataset", "k"]).ngroups
    return Finding(claim, f"the final gap falls with kT at {n - len(bad)} of {n} (dataset, k)", not bad,
                   "" if not bad else "it rises with kT at " + ", ".join(bad) + " (a stochastic last iterate)")


def finding_lazy_t(kt) -> Finding:
    claim = ("not advancing t on steps without violators improves convergence at small k, though it stays slower "
             "than a larger k (4.5; checked at the smallest k, every kT)")
    plain = {(ds, ep): g for ds, ep, _, g in _per_kT(kt, False)}
    lazy = {(ds, ep): g for ds, ep, _, g in _per_kT(kt, True)}
    both = sorted(set(plain) & set(lazy))
    if not both:
        return Finding(claim, "no k sweep with both t rules", None, "the run lacks lazy_t in pegasos_kT")
    parts, better, slower = [], 0, 0
    for key in both:
        p, z = plain[key], lazy[key]
        k0 = p["k"].iloc[0]
        gp, gz = p.iloc[0]["rel_subopt"], z[z["k"] == k0]["rel_subopt"].iloc[0]
        best = p["rel_subopt"].min()
        better += gz < gp
        slower += gz > best
        row = z[z["k"] == k0].iloc[0]
        share = (f", t advanced on {100 * row['steps_t'] / row['T']:.1f}% of its steps"
                 if math.isfinite(row["steps_t"]) else "")
        parts.append(f"{_name(key[0])} kT={fmt(float(p['kT'].iloc[0]))}, k={k0}: {fmt(gp)} -> lazy {fmt(gz)}{share} "
                     f"(best k {fmt(best)})")
    holds = bool(better == len(both) and slower == len(both))
    why = ""
    if better < len(both):
        why = (f"lazy t is better at the smallest k in only {better} of {len(both)} cells: t stays small (the "
               "share of steps above), so the step 1/(lambda t) stays that many times larger, and the last "
               "iterate, one example's step from the one before, keeps the noise of those larger steps (our reading)")
    elif slower < len(both):
        why = f"lazy t at the smallest k catches up with the best k in {len(both) - slower} of {len(both)} cells"
    return Finding(claim, "; ".join(parts), holds, why)


# Section 4.3's and Figure 3's numbers are RCV1's at lambda = 1e-4 (C = 1/(lambda n) = 0.014 on
# 700,000 rows). On another corpus the same lambda is another problem: rotten_tomatoes' 11,146 rows
# make C = 0.90, 63 times the regularisation's reach, so those numbers are not comparable there;
# the mechanisms (starts, k against T, lazy t, an exact solver's cost) are judged on each dataset.
RCV1_LIKE = ("rcv1_full",)
RCV1_NUMBERS = ("gap_iterations", "test_error")
RULES = {
    "starts": f"final objectives of the starts within {100 * START_SPREAD:g}% of each other on the same batches",
    "gap_iterations": f"both 0.3% and 0.1% reached, each within {IT_FACTOR:g}x their iterations (200, 560), on a "
                      "certified f*",
    "exact_is_slow": ("Pegasos's examples read to 0.1% (k x iterations) below dcd's coordinate updates to its "
                      "certified optimum: each one example's sparse product and update, so the work of one core, "
                      "whatever the load (their seconds: about 26 s to 0.1% against 4 h)"),
    "test_error": f"Pegasos's test error at {AT_IT} iterations at most {ERR_PP:g} pp above the exact solver's (theirs: "
                  f"{THEIRS_ERR_50:g} against {THEIRS_ERR_EXACT:g})",
    "small_k_slow": f"the smallest k's final gap at least {SLOW_FACTOR:g}x the best k's, at every kT",
    "only_kT": f"at every kT the final gaps over k within a factor {SLOW_FACTOR:g}",
    "larger_kT": "at every k the final gap falls as kT grows",
    "lazy_t": "at the smallest k and every kT, lazy t ends below plain t and above the best k",
}
_FINDINGS = (("starts", finding_starts, "st"), ("gap_iterations", finding_gap_iterations, "conv"),
             ("exact_is_slow", finding_exact_is_slow, "conv"), ("test_error", finding_test_error, "conv"),
             ("small_k_slow", finding_small_k_slow, "kt"), ("only_kT", finding_only_kT_matters, "kt"),
             ("larger_kT", finding_larger_kT_better, "kt"), ("lazy_t", finding_lazy_t, "kt"))


def rule_test_error(pegasos_at_50: float, exact: float) -> bool:
    """ "Reaches the exact solver's level early": at most ERR_PP points above it (one-sided)."""
    return bool(pegasos_at_50 - exact <= ERR_PP)


def rule_iterations(it_03: float, it_01: float) -> bool:
    """Both targets reached within IT_FACTOR times their iteration counts."""
    return bool(it_03 <= IT_FACTOR * THEIRS_IT[3e-3] and it_01 <= IT_FACTOR * THEIRS_IT[1e-3])


def _C_of(conv, ds) -> str:
    """C = 1/(lambda n_train) of the dataset's Pegasos fit, said in words."""
    r = conv[(conv["dataset"] == ds) & (conv["solver_entry"] == PEGASOS)]
    if r.empty or not (r["lambda"].iloc[0] and r["n_train"].iloc[0]):
        return "another C"
    return f"C = 1/(lambda n) = {fmt(1 / (float(r['lambda'].iloc[0]) * float(r['n_train'].iloc[0])))}"


def _datasets(*tables) -> list[str]:
    found = set().union(*(set(t["dataset"]) for t in tables if "dataset" in t.columns))
    return [d for d in PAPER_DATA if d in found] + sorted(found - set(PAPER_DATA))


def findings(conv: pd.DataFrame, st: pd.DataFrame, kt: pd.DataFrame) -> list[Finding]:
    """Each finding once per dataset: a claim that holds on one corpus and not on another is two
    verdicts, not one "differs". Section 4.3's and Figure 3's numbers (RCV1's) are not comparable
    on a corpus that is not RCV1-like."""
    tables = {"conv": conv, "st": st, "kt": kt}
    datasets = _datasets(conv, st, kt)
    out = []
    for key, fn, table in _FINDINGS:
        first = True
        for ds in datasets:
            sub = tables[table]
            sub = sub[sub["dataset"] == ds] if "dataset" in sub.columns else sub
            if sub.empty:
                continue
            f = fn(sub)
            if key in RCV1_NUMBERS and ds not in RCV1_LIKE and f.holds is not None:
                f = not_comparable(f.claim, f.ours, "their numbers are RCV1's at C = 1/(lambda n) = 0.014; the same "
                                   f"lambda here is {_C_of(conv, ds)}, another regime")
            f.claim = (f.claim if first else "the same") + f" — on {_name(ds)}"
            f.rule = RULES[key]
            first = False
            out.append(f)
        if first:
            f = fn(tables[table])
            f.rule = RULES[key]
            out.append(f)
    return out


# ------------------------------------------------------------------------------ tables
def _num(v, digits=2) -> str:
    return "" if v is None or not math.isfinite(float(v)) else f"{float(v):.{digits}f}"


def table_4_3(conv) -> pd.DataFrame:
    """Section 4.3 and Figure 3: theirs, then ours per dataset and entry."""
    rows = [{"data": "RCV1 CCAT (paper)", "solver": "Pegasos k=8000", "to 0.3%": "200 it., 9.2 s",
             "to 0.1%": "560 it.", "final gap": "", "test error %": f"{THEIRS_ERR_50:g} at 50 it.",
             "f* (its rel. gap)": "SVMlight, ~4 h"},
            {"data": "RCV1 CCAT (paper)", "solver": "SVMlight", "to 0.3%": "", "to 0.1%": "", "final gap": "",
             "test error %": f"{THEIRS_ERR_EXACT:g}", "f* (its rel. gap)": ""}]
    for r in conv.to_dict("records"):
        err = f"{r['test_err']:.2f}"
        if r["solver_entry"] == PEGASOS and math.isfinite(r["test_err_at"]):
            err = f"{r['test_err_at']:.2f} at {r['err_it']:.0f} it.; {err} at {r['n_iter']:.0f}"
        rows.append({"data": f"{_name(r['dataset'])}, {r['n_train']:,.0f} / {r['n_test']:,.0f}",
                     "solver": "Pegasos k=8000" if r["solver_entry"] == PEGASOS else "dcd (exact)",
                     "to 0.3%": _when(r, 3e-3), "to 0.1%": _when(r, 1e-3),
                     "final gap": f"{fmt(r['rel_subopt'])} ({r['status']}, {r['n_iter']:.0f} it., {r['fit_time_s']:.2f} s)",
                     "test error %": err,
                     "f* (its rel. gap)": f"{r['f_star_solver']}, {fmt(r['f_star_rel_gap'])} ({r['f_star_status']})"})
    return pd.DataFrame(rows)


def table_k_vs_T(kt) -> pd.DataFrame:
    """Figure 4's numbers: final relative gap per k at each kT, t advancing and lazy."""
    if kt.empty:
        return kt
    kt = kt.assign(cell=[f"{fmt(g)} (T={T:.0f}" + (f", t={t:.0f})" if lazy and math.isfinite(t) else ")")
                         for g, T, t, lazy in zip(kt["rel_subopt"], kt["T"], kt["steps_t"], kt["lazy_t"])],
                   t_rule=np.where(kt["lazy_t"], "lazy t", "t advances"))
    wide = kt.pivot_table(index=["dataset", "kT", "t_rule"], columns="k", values="cell", aggfunc="first")
    wide.columns = [f"k={c}" for c in wide.columns]
    wide = wide.reset_index()
    wide["dataset"] = wide["dataset"].map(_name)
    wide["kT"] = wide["kT"].map(lambda v: fmt(float(v)))
    return wide.fillna("")


# ------------------------------------------------------------------------------ figures
def _traces_of(data: ReportData, fits: pd.DataFrame) -> dict:
    return {k: g.sort_values("iteration") for k, g in data.traces[data.traces["key"].isin(fits["key"])].groupby("key")}


def fig_random_starts(data: ReportData):
    fits = _fits(data, STARTS)
    if fits.empty or "param_init_seed" not in fits.columns:
        raise Skip("no pegasos_starts run")
    by_key = _traces_of(data, fits)
    datasets = sorted(fits["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.6, height=4.2)
    for ax, ds in zip(axes, datasets):
        sub = fits[fits["dataset"] == ds].sort_values(["param_random_state", "param_init_seed"])
        seeds = sorted(sub["param_init_seed"].unique())
        st = styles(len(seeds))
        dashes = ["-", "--", ":", "-."]
        for r in sub.itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is None:
                continue
            i = seeds.index(r.param_init_seed)
            ax.plot(tr["iteration"], tr["primal"], color=st[i]["color"],
                    linestyle=dashes[int(r.param_random_state) % len(dashes)], linewidth=1.1, alpha=0.8,
                    label=f"start init_seed={r.param_init_seed:.0f}, batches random_state={r.param_random_state:.0f}")
        _decorate(ax, _name(ds), "iteration t", "primal objective P (C = 1/(lambda n))", 0, logx=True, logy=True)
        _log_ticks(ax)
    figure_legend(fig, axes)   # the same starts and seeds on both datasets: listed once
    fig.suptitle("Figure 2: Pegasos from random starts (colour: start; dash: batch seed)", fontsize=9)
    return fig


def fig_gap(data: ReportData):
    fits = data.fits[data.fits["solver_entry"].isin((PEGASOS, EXACT))]
    if "f_star" not in fits.columns or fits["f_star"].isna().all():
        raise Skip("no pegasos or dcd fit with a certified f*")
    fits = fits[fits["f_star"].notna()]
    by_key = _traces_of(data, fits)
    datasets = sorted(fits["dataset"].unique())
    fig, axes = _panels(2 * len(datasets), width=5.2, height=4.0, ncols_max=2)
    for i, ds in enumerate(datasets):
        ax_it, ax_t = axes[2 * i], axes[2 * i + 1]
        for r in fits[fits["dataset"] == ds].itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is None:
                continue
            gap = (tr["primal"] - r.f_star) / abs(r.f_star)
            floor = max(float(r.f_star_rel_gap), 1e-12)
            gap = np.maximum(gap, floor)
            colour = "tab:blue" if r.solver_entry == PEGASOS else "tab:red"
            label = "Pegasos k=8000 (steps)" if r.solver_entry == PEGASOS else "dcd, exact (passes)"
            ax_it.plot(tr["iteration"], gap, color=colour, label=label)
            ax_t.plot(tr["time_s"], gap, color=colour, label=label)
        for ax in (ax_it, ax_t):
            for eps, ls in zip(TARGETS, ("--", ":")):
                ax.axhline(eps, color="0.4", linestyle=ls, linewidth=0.9, label=f"{100 * eps:g}%")
        for eps in TARGETS:
            ax_it.axvline(THEIRS_IT[eps], color="tab:green", linestyle="--" if eps == 3e-3 else ":", linewidth=0.9,
                          label=f"theirs to {100 * eps:g}%: {THEIRS_IT[eps]} it.")
        _decorate(ax_it, f"{_name(ds)}: against iterations", "iteration (Pegasos step / dcd pass)",
                  "(P - f*) / |f*|", 0, logx=True, logy=True)
        _decorate(ax_t, f"{_name(ds)}: against solver seconds", "solver seconds", "(P - f*) / |f*|", 0,
                  logx=True, logy=True)
        _log_ticks(ax_it)
        _log_ticks(ax_t)
    figure_legend(fig, axes)   # the same lines in every panel: listed once
    fig.suptitle("Section 4.3: relative gap to the certified optimum (lambda = 1e-4)", fontsize=9)
    return fig


def fig_test_error(data: ReportData):
    fits = data.fits[data.fits["solver_entry"] == PEGASOS]
    if "test_error" not in data.traces.columns or fits.empty:
        raise Skip("no test-error trace of pegasos (run.trace_test_error=true)")
    by_key = _traces_of(data, fits)
    exact = _fits(data, EXACT)
    datasets = sorted(fits["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.4, height=4.0)
    for ax, ds in zip(axes, datasets):
        n = 0
        for r in fits[fits["dataset"] == ds].itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is not None:
                ax.plot(tr["iteration"], 100 * tr["test_error"], color="tab:blue", label="Pegasos k=8000")
                n += 1
        x = exact[exact["dataset"] == ds]
        if len(x):
            ax.axhline(100 * (1 - float(x["test_accuracy"].iloc[0])), color="tab:red", linestyle="--",
                       label="dcd, exact solver")
            n += 1
        ax.axvline(AT_IT, color="0.5", linestyle=":", linewidth=0.9, label=f"{AT_IT} iterations")
        _decorate(ax, _name(ds), "iteration t", "test error (%)", n + 1, logx=True)
        # The whole curve from t = 1 (a cap at 3x the exact error hid the first 40 iterations).
        ax.set_ylim(0.0, ax.get_ylim()[1])
    fig.suptitle("Figure 3: test error against iterations (ordered split)", fontsize=9)
    return fig


def fig_k_vs_T(kt: pd.DataFrame):
    if kt.empty or kt["k"].nunique() < 2:
        raise Skip("no k sweep at fixed kT")
    datasets = sorted(kt["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.6, height=4.4)
    for ax, ds in zip(axes, datasets):
        sub = kt[kt["dataset"] == ds]
        groups = list(sub.groupby(["epochs", "lazy_t"]))
        colours = styles(sub["epochs"].nunique())
        eps = sorted(sub["epochs"].unique())
        for (ep, lazy), g in groups:
            ax.plot(g["k"], g["rel_subopt"], color=colours[eps.index(ep)]["color"], marker="o" if not lazy else "s",
                    markersize=4, linestyle=":" if lazy else "-",
                    label=f"kT={fmt(float(g['kT'].iloc[0]))}" + (", lazy t" if lazy else ""))
        _decorate(ax, _name(ds), "mini-batch size k (T = kT / k steps)", "final (P - f*) / |f*|", len(groups),
                  logx=True, logy=True)
        _value_ticks(ax, sub["k"])
    fig.suptitle("Figure 4: k against T at fixed kT; dotted: t does not advance without violators", fontsize=9)
    return fig


FIGURES = {
    "fig2_random_starts": ("Figure 2: several random starting points",
                           "Pegasos (k=8000, lambda=1e-4) from random w_1 in the ball ||w|| <= 1/sqrt(lambda), "
                           "seeded by init_seed apart from the batches (random_state). The first step multiplies w_1 by "
                           "1 - eta_1 lambda = 0, so w_1 enters only through which examples of the first batch it puts "
                           "inside the margin; the trace starts after step 1."),
    "sec4_3_gap": ("Section 4.3: relative gap to the optimum",
                   "(P - f*)/|f*| against the certified f* (dcd at tol 1e-9, closed by its duality gap; the curve is "
                   "floored at f*'s own relative gap). Left: against iterations (a Pegasos step of k=8000 examples, a "
                   "dcd pass over all n), with their 200 and 560 iterations marked; right: against solver seconds."),
    "fig3_test_error": ("Figure 3: test error against iterations",
                        "Test error of Pegasos's iterate on the ordered split's test rows at each trace point, and the "
                        "exact solver's (dcd) test error."),
    "fig4_k_vs_T": ("Figure 4: k against T at fixed kT",
                    "Final relative gap of Pegasos (lambda=1e-4, last iterate) against the mini-batch size k with T = "
                    "kT / k steps, at three kT (1, 3 and 10 epochs of the training rows); solid: t advances every "
                    "step (Pegasos), dotted: t does not advance on steps without violators (rupnik 4.5)."),
}


# ------------------------------------------------------------------------------ the README
def readme(conv, st, kt, found, figs, skipped, setup: dict) -> str:
    out = header_lines(NAME, 'J. Rupnik, "Stochastic Subgradient Approach for Solving Linear Support Vector Machines - '
                       'an Overview", Jozef Stefan Institute, Ljubljana, 2008.', setup.get("fits", "?"), found)
    # Said before the findings: none of them is on RCV1.
    out[2:2] = ["**RCV1 is not obtainable offline.** The paper's data (Reuters RCV1, category CCAT, 804,414 x 47,236) "
                "are replaced by our RCV1-like generator at RCV1's size (`rcv1_full`), and the study is also run on a "
                "real sparse text corpus (`rotten_tomatoes`). Numbers on either are not RCV1's.\n"]
    out += [
        "", "## Setup, and how it differs from theirs\n",
        "- Problem: Pegasos's lambda/2 ||w||^2 + (1/n) sum max(0, 1 - y w'x), no bias (their 3.2.1), lambda = 1e-4 "
        "(their value for RCV1 CCAT, kept for both datasets). It is the C-SVM of every other solver here with "
        "C = 1/(lambda n_train) (`lambda` with `lambda_convention: pegasos`): Pegasos, the exact solver, the "
        "reference solve and f* are one problem, and the objective shown is that C-SVM's P = P_pegasos / (C n).",
        "- Pegasos: their Algorithm (3.2.2): batches of k drawn with replacement, step 1/(lambda t), projection onto "
        "the ball of radius 1/sqrt(lambda), the last iterate w_T+1. Section 4.3 and Figure 3: k = 8000, T = 1000 "
        "steps from w_1 = 0. Figure 2: 300 steps from random starts inside the ball (a uniform direction and "
        "radius), 5 starts (`init_seed`) x 2 batch seeds (`random_state`), the start seeded apart from the "
        "batches. Figure 4: k in {1, 10, 100, 1000, 10000} at kT = 1, 3 and 10 epochs of the training rows "
        "(T = epochs x ceil(n/k)), each with t advancing every step and with `lazy_t` (t does not advance on "
        "steps whose batch has no violator, their 4.5).",
        "- Exact solver and f*: theirs was SVMlight (about four hours of CPU). Ours is `dcd` (LIBLINEAR's dual "
        "coordinate descent) at tol 1e-9 on the projected-gradient spread; f* is a separate reference solve of "
        "the same problem, certified by its duality gap (f* lies in [P_ref - gap, P_ref]; the table gives gap/|f*|).",
        "- Split (their 4.4): the first rows train, the rest test, order kept (`cv=ordered`, n_train = 0.8701987 of "
        "the rows: 700,000 of RCV1-like's 804,414, as theirs). RCV1's order is by date; our generator draws rows "
        "independently, so on it the ordered split is as good as a random one.",
        "- Iterations to a target are read off trace points spaced 30 per decade (every step up to 30, then 8% "
        "apart), so they overstate by up to 8%; seconds are solver seconds without the trace's own cost, one fit "
        "at a time on a 2-core machine shared with other work: they are not reliable (in the committed run the "
        "load changed within a fit, several-fold), so the findings rest on iteration counts. Their 9.2 s were on "
        "2008 hardware.",
        f"- Data: {setup.get('rows', '')}.",
        "- rcv1_full: Zipf vocabulary of 47,236 terms, 76 nonzeros per row (RCV1's density 0.16%), unit-length "
        "tf-idf rows, labels from a sparse linear ground truth with a margin and 3% label noise, balanced (CCAT is "
        "47% positive). rotten_tomatoes: 12,808 review snippets (20,047 terms), built the same way as RCV1's vectors: tf-idf rows "
        "of unit length (`weighting: tfidf`).",
        "",
        *table_lines("Section 4.3 and Figure 3: the gap to the optimum, and test error",
                     "Iterations and solver seconds until (P - f*)/|f*| first falls within 0.3% and 0.1%, the final "
                     "gap, and the test error (for Pegasos at the last trace point at or before 50 iterations, and at "
                     "the end). Rows are train / test.", table_4_3(conv)),
        *table_lines("Figure 2: random starts",
                     "Per batch seed: the largest relative difference between the starts' objectives at any traced "
                     "iteration, and the spread of their final objectives.",
                     st.assign(dataset=st["dataset"].map(_name)) if not st.empty else st),
        *table_lines("Figure 4: k against T at fixed kT",
                     "Final (P - f*)/|f*| and T per k, at each kT (examples drawn: epochs x training rows); under "
                     "lazy t, also t, the steps that advanced t (had a violator).", table_k_vs_T(kt)),
        "## Figures\n", *figure_lines(FIGURES, figs, skipped)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ writer
def _setup(data: ReportData) -> dict:
    res = data.results
    rows = res.groupby("dataset")[["n_train", "n_test"]].median() if len(res) else pd.DataFrame()
    return {"fits": len(res),
            "rows": "; ".join(f"{_name(d)} {int(r.n_train):,} train / {int(r.n_test):,} test rows"
                              for d, r in rows.iterrows())}


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    conv, st, kt = convergence(data), starts(data), k_vs_T(data)
    figs, skipped = save_figures(draw_figures({
        "fig2_random_starts": lambda: fig_random_starts(data),
        "sec4_3_gap": lambda: fig_gap(data),
        "fig3_test_error": lambda: fig_test_error(data),
        "fig4_k_vs_T": lambda: fig_k_vs_T(kt)}), out)
    text = readme(conv, st, kt, findings(conv, st, kt), figs, skipped, _setup(data))
    (out / "README.md").write_text(with_costs(text, run_dir, root, data.results))
    return out / "README.md"
