import os
import sys

# Run as a file (spark-submit takes this file as its application), Python puts this directory first on sys.path,
# where the `bookie` command group (bkctl/bookie/) would stand in for the `bookie` package: take it off.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from bkctl.cli import main

main()
