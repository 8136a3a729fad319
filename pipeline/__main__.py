"""`python -m pipeline [hydra overrides]`: a Hydra shim around `pipeline.run.run`."""
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pipeline.config import CONF_DIR, ConfigError, register_schema

register_schema()


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from pipeline.run import run
    try:
        run(cfg, HydraConfig.get().runtime.output_dir)
    except ConfigError as exc:
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    from pipeline.config import check_group_choices
    try:
        check_group_choices([a for a in sys.argv[1:] if not a.startswith("-")])
    except ConfigError as exc:
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    main()
