"""``python -m dagster_kafka_flinklike.cli``: the ``dkf`` command line."""

import sys

from . import main

sys.exit(main())
