#!/bin/bash
# The merge of slurm-array.sh's shards: `sbatch --dependency=afterok:<array job id> slurm-merge.sh`.
#SBATCH --job-name=ragsweep-merge
#SBATCH --output=ragsweep-merge.log
set -euo pipefail
ragsweep merge grid.toml results/grid/*shard*of8 --out results
