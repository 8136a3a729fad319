"""The experiment schema: the structured configs Hydra composes into, and the key vocabulary.

The dataclasses below are registered as the schema ``base_config`` (`config.register_schema`), so
OmegaConf already refuses a wrong type or an unknown top-level key while Hydra composes; `config.validate`
checks every value and returns the typed, frozen `experiment.Experiment`, whose cv, cluster and run
sections are frozen copies of the sections declared here (one declaration of each field).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from solvers.params import BUDGET_PARAMS, PROBLEM_PARAMS, TASK_PARAMS, Param

# Problem-level keys of a solver entry (they define the optimisation problem), budget keys,
# and task keys: the solvers' table (solvers/params.py, whose ranges `config.validate` checks),
# and lambda with its convention, a paper's way to give C. Everything else in params/grid is a
# solver parameter checked against the solver's own declaration in the registry.
PROBLEM_KEYS = (*PROBLEM_PARAMS, "lambda", "lambda_convention")
BUDGET_KEYS = tuple(BUDGET_PARAMS)
TASK_KEYS = tuple(TASK_PARAMS)
CV_KINDS = ("kfold", "holdout", "repeated", "ordered", "none", "kfold_test")
CLUSTER_KINDS = ("local", "sequential", "address", "slurm", "kubernetes")
SCALINGS = ("none", "standard", "maxabs", "minmax")
REFERENCE_MODES = ("auto", True, False)
# How a sweep visits its grid (`SearchConf`): every point (grid), a C search with a certified CV
# error (certified), LIBLINEAR's warm C search (path), or successive halving over the grid's
# points (halving).
SEARCH_KINDS = ("grid", "certified", "heldout", "path", "halving")
HALVING_RESOURCES = ("max_iter", "tol", "train_fraction")
# A halving rung's share of each training fold's rows (search.resource=train_fraction): in a fit's
# budget, and so in its key, only when set.
SUBSAMPLE_KEY = "train_fraction"
# budget.tol of a fit whose entry sets none (part of its key; the plan's, and a halving search's
# last rung's).
DEFAULT_TOL = 1e-4

# Timing fits (`run.timing`): "auto" plans them for the problems two or more solver entries share,
# true for every fit with a certified reference, false for none (docs/design/execution.md,
# "Timing fits").
TIMING_MODES = ("auto", True, False)
# A timing fit's budget B, CPU seconds on its own clock (`run.timing_budget_s`): a fit that has not
# reached the target by then is censored, "not reached within B" (benchopt's timeout). The
# default is in no key (plan.timing_template). It holds what README recipe 1 compares below
# C = 100 and cuts the cold solves of C = 100 that never reach the target; a larger file needs a
# larger one, which the plan's cost line names (docs/design/execution.md, "Timing fits").
TIMING_BUDGET_S = 0.5

# The relative suboptimality (P - f*)/|f*| the report times solvers to unless `report.target`
# says otherwise: the one a library's timing ladder resolves (pipeline/engine/ladder.py).
REPORT_TARGET = 1e-3


# What the report reads from a run's config: `baseline` (a solver entry the ratios are taken
# against), `formats` (the figures' files: png always, pdf for papers when asked; drawing a PDF
# costs as long again), `figures` (false: tables only, no figure nor interactive page: a
# sweep read through its tables, or a test that looks at none) and `target` (the relative
# suboptimality (P - f*)/|f*| every speed table, ratio and profile times solvers to).
REPORT_KEYS = ("baseline", "formats", "figures", "target")    # `ReportConf`'s fields (a test holds them equal)
REPORT_FORMATS = ("png", "pdf")


class ConfigError(ValueError):
    """An invalid experiment setting; the message names the key and the value."""


def allowed(default=dataclasses.MISSING, *, factory=None, when=None, why: str | None = None, **rule):
    """A section's field with what it takes declared beside it, as scikit-learn declares its
    parameter constraints: ``rule`` is a `solvers.params.Param`'s range (kind, low, high,
    open_low, open_high, options, none_ok, words, rule), the ranges and words of the solvers'
    own table. ``when``: the section's kinds (``cv.kind``, ...) the rule applies to, default
    every kind; a mapping gives each kind its own message. ``why``: the message of a refusal
    (default: the Param's words). `config.check_section` walks these; the rules between fields
    stay in `config.validate`."""
    meta = {"allowed": Param(None if factory else default, **rule), "when": when, "why": why}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _n_train_reason(n) -> str | None:
    """cv.n_train of an ordered split: the first n rows (an integer >= 1) or a share in (0, 1)."""
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1 or isinstance(n, float) and 0 < n < 1:
        return None
    return ("an ordered split needs the training rows: an integer >= 1 (the first n_train rows) or a "
            "fraction in (0, 1) of the rows")


def _auto_or_count(v) -> str | None:
    """run.chunk: "auto", or a whole number of fits per task."""
    ok = v == "auto" or isinstance(v, int) and not isinstance(v, bool) and v >= 1
    return None if ok else "must be auto or an integer >= 1"


def _one_of(options: tuple, words: str):
    """A rule: value in options (which may hold True and False beside strings), else `words`."""
    return lambda v: None if v in options else words


@dataclass
class DatasetConf:
    builder: Optional[str] = None           # built-in builder name; default: the entry's key
    params: Dict[str, Any] = field(default_factory=dict)   # the builder's parameters (python -m pipeline.data builders)
    # none, standard, maxabs or minmax; fitted on the training fold only
    scale: str = allowed("none", kind="str", options=SCALINGS)
    # stratified subsample before the folds (smoke, tests): at least two rows of each class in two folds
    max_rows: Optional[int] = allowed(None, kind="int", low=4, none_ok=True, why="must be >= 4 or null")
    positive: Optional[Any] = None           # label that becomes +1 (default: the larger label)
    # Problem keys for this dataset alone (C or lambda with lambda_convention, loss, ...): each
    # replaces every solver's value of that key on this dataset (a paper's lambda per dataset).
    problem: Dict[str, Any] = field(default_factory=dict)


@dataclass
class SolverConf:
    solver: Optional[str] = None             # registered solver; default: the entry's key
    params: Dict[str, Any] = field(default_factory=dict)   # fixed problem, budget, task and solver keys
    grid: Dict[str, Any] = field(default_factory=dict)     # swept keys: a product over keys, `zip` pairs lists
    # The dataset entries this entry runs on (default: every selected one); bertini's one-vs-all
    # entry runs on the three-class set only, and its C x gamma grids on the binary one only.
    datasets: Optional[list] = None
    # only the first `folds` folds (a costly entry on a sample)
    folds: Optional[int] = allowed(None, kind="int", low=1, none_ok=True, why="must be >= 1 or null (every fold)")


@dataclass
class CVConf:
    kind: str = allowed("kfold", kind="str", options=CV_KINDS)   # kfold, holdout, repeated, ordered, none or kfold_test
    # kfold and kfold_test: the number of stratified folds
    folds: int = allowed(5, kind="int", low=2, when={
        "kfold": "k-fold needs at least 2 folds",
        "kfold_test": "kfold_test runs k-fold on the rows left after the test set: at least 2 folds"})
    shuffle: bool = True                     # kfold: shuffle the rows before cutting the folds
    # holdout, repeated, kfold_test: the share of rows held out
    test_size: float = allowed(0.1, low=0.0, high=1.0, open_low=True, open_high=True,
                               when=("holdout", "repeated", "kfold_test"))
    rounds: int = allowed(10, kind="int", low=1, when=("repeated",))   # repeated: how many stratified shuffle splits
    # ordered: the first n_train rows (int, or a fraction in (0, 1)) train
    n_train: Any = allowed(None, kind="any", rule=_n_train_reason, when=("ordered",))


@dataclass
class ClusterConf:
    kind: str = allowed("local", kind="str", options=CLUSTER_KINDS)   # local, sequential, address, slurm or kubernetes
    n_workers: Optional[int] = allowed(None, kind="int", low=1, none_ok=True)   # local: default = cores
    threads_per_worker: int = allowed(1, kind="int", low=1)   # local: Dask worker threads per worker
    # local: workers in processes of their own (Dask's nannies), not threads of the client; the
    # fits run in sandbox processes either way (pipeline/engine/sandbox.py)
    processes: bool = False
    address: Optional[str] = None            # address: tcp://host:8786
    memory_limit: str = "auto"               # local: per worker ("auto": the machine's memory shared out)
    # local and slurm: the Dask dashboard, on loopback at a free port by default (reach it from
    # another machine through `ssh -L`); ":0" any free port on every interface, null none
    dashboard_address: Optional[str] = "127.0.0.1:0"
    jobqueue: Dict[str, Any] = field(default_factory=dict)   # slurm: dask-jobqueue's SLURMCluster kwargs
    kubernetes: Dict[str, Any] = field(default_factory=dict)  # kubernetes: name, image, resources, env
    adapt: Dict[str, Any] = field(default_factory=lambda: {"minimum": 1, "maximum": 1})  # slurm: jobs; k8s: workers
    lifetime_margin_s: int = 1200            # slurm: workers retire this long before the walltime
    lifetime_stagger_s: int = 240            # slurm: ... give or take this long
    blas_threads: int = allowed(1, kind="int", low=1)   # BLAS/OpenMP/numba threads per task process
    # Who may connect (docs: Operation, TLS). slurm, and local with worker processes: TLS with
    # credentials made for the cluster alone, by default. ca_file, cert, key (PEM files): TLS with
    # these instead, and for address a tls:// scheduler's. "none": no TLS (a warning names the risk)
    security: Any = field(default_factory=lambda: {"ca_file": None, "cert": None, "key": None})


@dataclass
class SearchConf:
    """How each (dataset, solver entry) sweep is searched (pipeline/search/; docs/guide/search.md)."""
    kind: str = allowed("grid", kind="str", options=SEARCH_KINDS)   # grid (every point), certified or halving
    # certified: C over [C_min, C_max] until the best CV error found is within epsilon (a share
    # of the rows: 0.005 is half a point) of a lower bound on the CV error at every C in the range
    # (Shibagaki et al. 2015); the entry's own C values are not used. heldout: the same for the
    # validation error of one fold (the first), each fit's tolerance set from epsilon, the other
    # folds fitted at the best C and reported.
    C_min: float = allowed(1.0e-3, low=0.0, open_low=True, finite=True, when=("certified", "heldout"))
    # certified: the range's top; path: the last C (LIBLINEAR's cap, 1024: conf/search/path.yaml)
    C_max: float = allowed(1.0e3, low=0.0, open_low=True, finite=True, when=("certified", "heldout", "path"))
    # path: LIBLINEAR's C search (`train -C`): from C_start (null: LIBLINEAR's own start,
    # 2^floor(log2(1/(2 l max ||x||^2)))) doubling up to C_max, each fold warm along it, stopping
    # once every fold's model is unchanged for 5 C values in a row (pipeline/search/path.py)
    C_start: Optional[float] = allowed(None, low=0.0, open_low=True, finite=True, none_ok=True, when=("path",))
    epsilon: float = allowed(0.01, low=0.0, high=1.0, open_low=True, open_high=True, when=("certified", "heldout"),
                             why="must be in (0, 1): a share of the validation rows (0.005 is half a point of CV error)")
    # certified: log-spaced C values of the first round
    initial: int = allowed(5, kind="int", low=1, when=("certified", "heldout"))
    # certified: new C values a round (their folds run in parallel)
    per_round: int = allowed(2, kind="int", low=1, when=("certified", "heldout"))
    # certified: rounds after the first before it stops uncertified
    max_rounds: int = allowed(20, kind="int", low=0, when=("certified", "heldout"))
    # certified: a C whose own bound is more than epsilon/2 below its CV error is fitted again at
    # tol x refine (its duality gap hides its rows), down to min_tol
    refine: float = allowed(0.1, low=0.0, high=1.0, open_low=True, open_high=True, when=("certified", "heldout"),
                            why="must be in (0, 1): a refit's tol is the last one's times refine")
    min_tol: float = allowed(1.0e-6, low=0.0, open_low=True, finite=True, when=("certified", "heldout"))
    # halving: successive halving over the entry's grid (scikit-learn's HalvingGridSearchCV):
    # each rung keeps the best 1/factor of the candidates and gives them factor times the
    # resource, warm-started from their last rung
    factor: float = allowed(3.0, low=1.0, open_low=True, when=("halving",),
                            why="must be a number > 1: each rung keeps the best 1/factor of its candidates "
                                "(HalvingGridSearchCV's factor)")
    # halving: max_iter (the solver's passes), tol, or train_fraction (the share of each training
    # fold's rows, HalvingGridSearchCV's n_samples)
    resource: str = allowed("max_iter", kind="str", options=HALVING_RESOURCES, when=("halving",))
    # halving: the first rung's resource (max_iter: passes; tol: the loosest tol; train_fraction:
    # a share in (0, 1]); null: the last rung's divided (tol: multiplied) by factor per rung
    min_resources: Optional[float] = None


def _formats_reason(v) -> str | None:
    """report.formats: a list holding png (the html embeds the PNGs) and any of REPORT_FORMATS."""
    if v is None or isinstance(v, (list, tuple)) and "png" in v and set(v) <= set(REPORT_FORMATS):
        return None
    return f"must be a list holding png and any of {', '.join(REPORT_FORMATS)} (the html embeds the PNGs)"


@dataclass
class ReportConf:
    """What the report reads from a run's config (`REPORT_KEYS`); null is each key's default."""
    # a solver entry the report's ratios are taken against (default: the reference entries); that
    # it is an entry of this run is a rule between sections, in `config.validate`
    baseline: Optional[str] = None
    # the figures' files: null is [png]; [png,pdf] adds a PDF of each (for papers; as long again to draw)
    formats: Any = allowed(None, kind="any", rule=_formats_reason)
    # null is true; false: tables only, no figure nor interactive page (typed Any: a wrong value is
    # refused by the rule, in its words, not by the schema while composing)
    figures: Any = allowed(None, kind="bool", none_ok=True)
    # null is 1e-3: the (P - f*)/|f*| every speed table, ratio and profile times solvers to
    target: Optional[float] = allowed(None, low=0.0, high=1.0, open_low=True, open_high=True, none_ok=True,
                                      why="must be a relative suboptimality (P - f*)/|f*| in (0, 1), e.g. 1e-3")



@dataclass
class StoreConf:
    root: Optional[str] = None               # default: $SVMBENCH_STORE or the user cache dir


@dataclass
class RunConf:
    # solver time limit per task (status "timeout")
    timeout_s: Optional[float] = allowed(600.0, low=0.0, open_low=True, none_ok=True)
    # On a Dask cluster a spec still running timeout_s (x binary problems) + this grace after it
    # started is killed from outside and recorded as "timeout" (pipeline/engine/sandbox.py).
    timeout_grace_s: float = allowed(60.0, low=0.0)
    retries: int = allowed(1, kind="int", low=0)   # re-run of a task whose worker died
    trace: bool = True                       # record each fit's convergence trace (traces.parquet)
    trace_per_decade: int = allowed(10, kind="int", low=1)   # trace points per decade of solver time
    trace_test_error: bool = False           # test error at each trace point (a column of traces.parquet)
    # The recorder's share of solver time (it defers due points beyond it); null: every due point,
    # for figures that need a point per pass whatever it costs (roethel_brynda's Figures 5-6).
    trace_overhead: Optional[float] = allowed(0.05, low=0.0, high=1.0, open_low=True, none_ok=True)
    keep_models: bool = False                # each fit's model (w, b or alpha, support) in models.parquet
    # Each fit solved this many times, its fit_time_s the fastest (timeit's rule: the slower ones
    # measured the machine, not the solver): for timing verdicts on fits of milliseconds.
    time_repeats: int = allowed(1, kind="int", low=1, why="must be an integer >= 1 (each fit solved that many times, "
                                                           "its time the fastest)")
    # Within a fold, the solver entries' fits in turn (the first fit of each entry, then the
    # second of each, ...) instead of entry after entry: methods compared in one random start or
    # grid point run back to back, under the same load, for paired timing verdicts.
    interleave: bool = False
    # Certified f* per problem for suboptimality: "auto" solves one only for problems that two
    # or more solver entries fit (what the comparison tables need), true for all, false none.
    reference: Any = allowed("auto", kind="any", rule=_one_of(REFERENCE_MODES, "must be auto, true or false"))
    # the reference solve's tolerance (its budget: part of its key) and its iteration cap
    reference_tol: float = allowed(1e-9, low=0.0, open_low=True)
    reference_max_iter: int = allowed(100_000, kind="int", low=1)
    # per reference; a stop is flagged, not hidden
    reference_time_limit_s: Optional[float] = allowed(60.0, low=0.0, open_low=True, none_ok=True)
    warm_start: bool = True                  # C paths of warm-start solvers run in one task, warm
    # Cold, densely traced timing fits beside the sweep, which the report's speed comparisons
    # read (a reference library: a ladder of cold solves capped at 1, 2, 3, 4, 5, 6, 8, 10, ...
    # iterations): "auto" for the problems two or more solver entries share, true for every fit
    # with a certified reference, false none (speed is then compared only warm to warm, cold to cold).
    timing: Any = allowed("auto", kind="any", rule=_one_of(TIMING_MODES, "must be auto, true or false"))
    # Each timing fit's budget, CPU seconds on its own clock (TIMING_BUDGET_S): a traced fit is cut
    # there, a ladder runs no rung past it, and a target not reached within it is censored ("not
    # reached within B" in the report, never a time); null: none (to the solver's own stop).
    timing_budget_s: Optional[float] = allowed(TIMING_BUDGET_S, low=0.0, open_low=True, none_ok=True)
    # fits per task for short fits: "auto" or an int >= 1
    chunk: Any = allowed("auto", kind="any", rule=_auto_or_count)
    progress: bool = True                    # a progress bar on a terminal, progress lines in a log
    # Without a terminal (nohup, a SLURM or CI log), a progress line to stderr and run.log this often:
    # fits done of planned per phase, elapsed, a rough ETA.
    progress_every_s: float = allowed(15.0, low=0.0, open_low=True)
    dry_run: bool = False                    # print the plan (datasets, tasks, shards done and to do); run nothing
    retry_errors: bool = True                # a rerun recomputes tasks that ended in "error"


@dataclass
class Config:
    name: str = "default"                    # the experiment's name (an experiment yaml sets it)
    # Entries are typed by `config.typed` rather than by Dict[str, DatasetConf]: OmegaConf
    # cannot add a new typed entry from the command line (+solvers.dcd_l2={solver: dcd, ...}).
    datasets: Dict[str, Any] = field(default_factory=dict)
    solvers: Dict[str, Any] = field(default_factory=dict)
    # One sweep for every selected solver that takes the key (see `shared_grid_targets`).
    grid: Dict[str, Any] = field(default_factory=dict)
    cv: CVConf = field(default_factory=CVConf)                # the cross-validation scheme
    cluster: ClusterConf = field(default_factory=ClusterConf)  # where tasks run
    store: StoreConf = field(default_factory=StoreConf)       # the dataset store
    run: RunConf = field(default_factory=RunConf)             # how the run executes and records
    search: SearchConf = field(default_factory=SearchConf)    # grid, certified C search, or halving
    seed: int = 0                            # the experiment's seed: subsamples and folds derive from it
    smoke: bool = False                      # a quick check: few rows, 2 folds, two grid values, few iterations
    report: ReportConf = field(default_factory=ReportConf)    # report options: baseline, formats, figures, target
    # Solver plugins imported for this run: .py files (their sha256 is in their fits' task keys;
    # the run ships them to the workers) or dotted modules installed on every machine.
    plugins: list = field(default_factory=list)
    # A paper reproduction: after the report, run.py calls the writer registered under this name
    # in pipeline/papers/, which writes outputs/papers/<name>/ (the run's folder under smoke).
    paper: Optional[str] = None
