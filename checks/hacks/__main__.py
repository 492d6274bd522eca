"""`python -m checks.hacks`: the reward check (references full marks, every cheat in bounds)."""

import sys

from checks.hacks.check import main

sys.exit(main())
