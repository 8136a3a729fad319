"""`python -m pipeline [hydra overrides]`: a Hydra shim around `pipeline.run.run`.

Exit codes: 0 when every task of the plan has a result, 1 when some ended in `error` (after
shards, tables and report are written), 2 for an invalid configuration."""
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pipeline.config import CONF_DIR, ConfigError, register_schema

register_schema()
OVERRIDES: list[str] = []     # the command line as the user gave it (before prepare_overrides)
FAILED: list[int] = []        # failed task counts of the runs of this process (one per multirun job)


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from pipeline.config import check_composed
    from pipeline.run import run
    try:
        check_composed(cfg, OVERRIDES)
        out = run(cfg, HydraConfig.get().runtime.output_dir)
    except ConfigError as exc:
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    # Not sys.exit here: in a multirun it would end the sweep before its other jobs.
    FAILED.append(out["failed"])


if __name__ == "__main__":
    from pipeline.config import prepare_overrides
    OVERRIDES[:] = [a for a in sys.argv[1:] if not a.startswith("-")]
    try:
        prepared = prepare_overrides(OVERRIDES)
    except ConfigError as exc:
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    rewritten = iter(prepared)
    sys.argv[1:] = [a if a.startswith("-") else next(rewritten) for a in sys.argv[1:]]
    main()
    sys.exit(1 if any(FAILED) else 0)
