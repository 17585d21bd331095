"""An item of the reproduction: its jobs and its report."""

from typing import Callable, NamedTuple


class Experiment(NamedTuple):
  """One item of the reproduction: a name, a title, `jobs(config)` (the jobs its
  config asks for, run by the study engine: `jbai.studies.store`) and
  `report(config, records, out)` (files and claims from the records of those
  jobs)."""

  name: str
  title: str
  jobs: Callable[[dict], list]                 # config -> jobs
  report: Callable[[dict, dict, str], list]    # (config, records, out) -> claims
