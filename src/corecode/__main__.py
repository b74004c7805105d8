import sys

from corecode.cli import main

sys.exit(main())
