"""``python -m wopdsl``: the ``wop`` command line."""

from wopdsl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
