import sys

from flashprof.verbs import main

sys.exit(main())
