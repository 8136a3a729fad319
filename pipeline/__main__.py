"""`python -m pipeline [hydra overrides]`: the run command (`pipeline.command`; its docstring
has the exit codes), handed to a kept cluster's launcher first when it names ``cluster=kept``."""
import sys

if __name__ == "__main__":
    # Before the command's imports (most of a small command's CPU): a kept cluster's launcher, which has them
    # done, runs a `cluster=kept` command in a child of its own (pipeline/kept/launcher.py).
    from pipeline.engine.rss import process_start
    from pipeline.kept.handoff import hand_off
    hand_off(sys.argv[1:], process_start())
    from pipeline.installation import InstallationError, check
    try:
        # Before the command's imports, which import `solvers`: `python -m` puts the current
        # directory first on sys.path, and a solvers/ folder there would run in its place.
        check()
    except InstallationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        from pipeline.command import command
    except KeyboardInterrupt:
        # Ctrl-C during the command's imports: its one line and 130 too.
        print("interrupted; run the same command to resume", file=sys.stderr)
        sys.exit(130)
    command(sys.argv[1:])
