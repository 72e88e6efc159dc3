#!/bin/bash
# A ragsweep grid as a Slurm job array: 8 tasks by default, each runs the shard its
# SLURM_ARRAY_TASK_ID names out of SLURM_ARRAY_TASK_COUNT (`--shard from-env`), on a filesystem
# every node sees (the cache is shared safely). Submit it and the merge, which starts only when
# every task succeeded; another number of shards is `--array` on the command line (it overrides
# the directive below) and the same number in RAGSWEEP_SHARDS for the merge:
#   n=16; array=$(sbatch --parsable --array=1-$n slurm-array.sh)
#   RAGSWEEP_SHARDS=$n sbatch --dependency=afterok:$array slurm-merge.sh
# tests/it/slurm.rs submits both to a one-node Slurm cluster and checks the merged run equals an
# unsharded one.
#SBATCH --job-name=ragsweep-grid
#SBATCH --array=1-8
#SBATCH --cpus-per-task=2
#SBATCH --output=ragsweep-grid-%a.log
set -euo pipefail
: "${RAGSWEEP_CACHE:=$PWD/cache}"
export RAGSWEEP_CACHE
ragsweep run -q --jobs "${SLURM_CPUS_PER_TASK:-1}" --shard from-env --out results grid.toml
