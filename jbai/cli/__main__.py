"""`python -m jbai.cli`: the `jbai` command line."""

import sys

from jbai.cli import main

if __name__ == "__main__":
  sys.exit(main())
