"""The report's status section: every non-converged status is named, counted and explained."""
import pandas as pd

from pipeline.report import STATUS_ADVICE, status_lines, status_table


def _results(statuses, Cs, solver="dcd", dataset="breast_cancer"):
    return pd.DataFrame({"dataset": dataset, "solver_entry": solver, "status": statuses, "C": Cs,
                         "key": [f"k{i}" for i in range(len(statuses))]})


def test_all_converged_says_so():
    res = _results(["converged"] * 4, [0.1, 0.1, 1.0, 1.0])
    assert status_lines(res) == ["All 4 fits converged (reached their tolerance)."]
    t = status_table(res)
    assert list(t.columns) == ["dataset", "solver_entry", "fits", "converged"]
    assert t.iloc[0].tolist() == ["breast_cancer", "dcd", 4, 4]


def test_every_non_converged_status_is_named_with_its_C_and_advice():
    res = pd.concat([
        _results(["converged", "max_iter", "max_iter", "converged"], [0.1, 10.0, 1.0, 1.0]),
        _results(["stalled", "converged"], [5.0, 1.0], solver="svmlight"),
        _results(["error"], [float("nan")], solver="qp", dataset="digits"),
    ], ignore_index=True)
    lines = status_lines(res)
    assert lines[0] == "3 of 7 fits converged; the others:"
    by_solver = {line.split(" on ")[0].lstrip("- "): line for line in lines[1:]}
    assert set(by_solver) == {"dcd", "svmlight", "qp"}
    # Counts out of the entry's own fits, the C values it happened at (sorted), plain advice.
    assert "2 of 4 fits `max_iter` (C=1, C=10)" in by_solver["dcd"]
    assert STATUS_ADVICE["max_iter"] in by_solver["dcd"]
    assert "1 of 2 fits `stalled` (C=5)" in by_solver["svmlight"]
    assert "1 of 1 fits `error`:" in by_solver["qp"]          # no C: none shown
    t = status_table(res).set_index(["dataset", "solver_entry"])
    assert list(t.columns) == ["fits", "converged", "error", "max_iter", "stalled"]
    assert t.loc[("breast_cancer", "dcd")].tolist() == [4, 2, 0, 2, 0]


def test_empty_results():
    empty = pd.DataFrame(columns=["dataset", "solver_entry", "status", "C", "key"])
    assert status_lines(empty) == [] and status_table(empty).empty
