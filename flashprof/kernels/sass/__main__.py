import sys

from flashprof.kernels.sass.command import main

sys.exit(main())
