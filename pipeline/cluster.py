"""`python -m pipeline.cluster start|status|stop`: the form the documentation gave before the
kept cluster had a package of its own, kept so that scripts using it still run; the command is
`pipeline.kept.cluster.main` (= `svmbench cluster`, `python -m pipeline.kept`)."""
import sys

if __name__ == "__main__":
    from pipeline.kept.cluster import main
    sys.exit(main(prog="python -m pipeline.cluster"))
