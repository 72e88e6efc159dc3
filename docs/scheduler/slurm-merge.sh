#!/bin/bash
# The merge of slurm-array.sh's shards: `sbatch --dependency=afterok:<array job id> slurm-merge.sh`,
# with RAGSWEEP_SHARDS set to the array's size when it is not 8 (sbatch passes the environment on).
#SBATCH --job-name=ragsweep-merge
#SBATCH --output=ragsweep-merge.log
set -euo pipefail
shards=${RAGSWEEP_SHARDS:-8}
ragsweep merge grid.toml results/grid/*shard*of"$shards" --out results
