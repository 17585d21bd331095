"""The imperative shell: what runs on the host around the functional core.

  simulate.py     `simulate`: its checks, and its `Result` from the pool's records
  driver.py       `run_pool`: chunks of the pool program, progress, resume, devices
  trace.py        `trace`: trajectories without stopping, at log-spaced times
  programs.py     the chunk program sharded over devices and hosts
  summary.py      mean tau and error rate with 95% intervals, T*(nu), the ratio
  caches.py       JAX's persistent compilation cache, opt-in
  cores.py        one JAX device per CPU core, opt-in (`use_cpu_cores`)
  processes.py    worker processes of one core and one device each (`jbai study --processes`)
  memory_maps.py  keeps a process under Linux's limit on memory mappings
  atomic.py       atomic writes: a file whole or not at all (text, JSON, CSV)
  jsonlines.py    a JSON-lines store of records, each with a checksum
  paths.py        output paths checked before any work
  progress.py     progress lines
"""
