import sys

from rewardkit.cli import main

sys.exit(main())
