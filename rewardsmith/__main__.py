import sys

from rewardsmith.cli import main

sys.exit(main())
