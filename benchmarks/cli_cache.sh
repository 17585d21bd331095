#!/usr/bin/env bash
# The command line's start-up cost with and without JAX's persistent compilation
# cache: `jbai run --trials 200` (ITCB, Gaussian K = 5) in fresh processes, a
# first run that fills an empty cache, then three that load from it.
# Usage: bash benchmarks/cli_cache.sh
set -euo pipefail
run() { /usr/bin/time -f "%e" python -c 'import sys; from jbai import cli; cli.main(["run", "--trials", "200", "--json"])' 2>&1 >/dev/null | tail -1; }
dir=$(mktemp -d)
for mode in off on; do
  if [ "$mode" = off ]; then export JBAI_NO_COMPILATION_CACHE=1; else unset JBAI_NO_COMPILATION_CACHE; export JBAI_COMPILATION_CACHE_DIR="$dir/cache"; fi
  first=$(run); again="$(run) $(run) $(run)"
  echo "cache $mode: first process ${first} s, next three: ${again} s"
done
rm -rf "$dir"
