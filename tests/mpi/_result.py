"""For scripts run by tests/mpi_harness.run_mpi_json: rank 0 writes its JSON result."""

import json
import os
from pathlib import Path


def write_result(obj: object) -> None:
    Path(os.environ["LINALG_IO_TEST_OUT"]).write_text(json.dumps(obj))
