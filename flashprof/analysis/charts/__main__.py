import sys

from flashprof.analysis.charts.driver import main

sys.exit(main())
