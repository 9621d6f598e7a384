#!/usr/bin/env bash
# Submits a sharded framecull scan to Slurm: an array job of N shard scans, then the merge as
# a job that runs when every shard has finished (afterok). Prints the job ids:
#   scan JOBID
#   merge JOBID
#
# usage: submit.sh ROOT WORK OUT [--shards N] [--parallel K] [--deep | --triage] [--cpus-per-task C]
#                  [--mem SIZE] [--indexes LIST] [-- SBATCH_OPTIONS...]
#   ROOT             the dataset root, seen by every node
#   WORK             shared folder for the shard projects (WORK/shard-I) and logs (WORK/logs)
#   OUT              the merged project
#   --shards N       number of shards (default 8)
#   --parallel K     at most K shards at once (default: no limit)
#   --deep           deep analysis (motion, cuts, integrity, quality, duplicates)
#   --triage         a triage instead: videos' packets read, keyframes decoded (integrity at
#                    a tenth of the deep analysis's cost)
#   --cpus-per-task C  cores per shard, passed to `framecull scan --jobs` (default 2)
#   --mem SIZE       memory per shard (sbatch --mem, e.g. 4G)
#   --indexes LIST   submit only these shard indexes (e.g. 2 or 1,5), then the merge of all
#                    N: to finish shards whose tasks were cancelled or failed
#   -- ...           further options for both sbatch calls (--partition, --account, --time...)
# The framecull binary is $FRAMECULL_BIN, else framecull on PATH; it must be at the same path on
# the nodes. Exit codes: docs/SCALE.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() {
  sed -n '/^# usage:/,/^#   -- /p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

(($# >= 3)) || usage
root="$1" work="$2" out="$3"
shift 3
shards=8 parallel="" deep=0 triage=0 cpus=2 mem="" indexes=""
extra=()
while (($#)); do
  case "$1" in
    --shards | --parallel | --cpus-per-task | --mem | --indexes)
      if (($# < 2)); then echo "submit.sh: $1 needs a value" >&2; exit 2; fi ;;
  esac
  case "$1" in
    --shards) shards="$2"; shift 2 ;;
    --parallel) parallel="$2"; shift 2 ;;
    --deep) deep=1; shift ;;
    --triage) triage=1; shift ;;
    --cpus-per-task) cpus="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --indexes) indexes="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "submit.sh: unknown option $1" >&2; usage ;;
  esac
done
case "$shards" in '' | *[!0-9]* | 0) echo "submit.sh: --shards needs a positive number" >&2; exit 2 ;; esac
if [ "$deep$triage" = 11 ]; then echo "submit.sh: --deep or --triage, not both" >&2; exit 2; fi

bin="${FRAMECULL_BIN:-$(command -v framecull || true)}"
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "submit.sh: no framecull binary: set FRAMECULL_BIN or put framecull on PATH" >&2
  exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
# A local root is made absolute; a URL (s3://...) is passed on as is.
case "$root" in
  *://*) ;;
  *)
    if [ ! -d "$root" ]; then
      echo "submit.sh: the dataset root $root is not a folder" >&2
      exit 2
    fi
    root="$(cd "$root" && pwd)"
    ;;
esac
mkdir -p "$work/logs"
work="$(cd "$work" && pwd)"
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

array="${indexes:-0-$((shards - 1))}"
if [ -n "$parallel" ]; then array="$array%$parallel"; fi
export FRAMECULL_BIN="$bin" FRAMECULL_ROOT="$root" FRAMECULL_WORK="$work" FRAMECULL_OUT="$out"
export FRAMECULL_SHARDS="$shards" FRAMECULL_DEEP="$deep" FRAMECULL_TRIAGE="$triage"

scan_opts=(--parsable --array="$array" --cpus-per-task="$cpus" --chdir="$work"
  --output="$work/logs/scan-%a.log")
if [ -n "$mem" ]; then scan_opts+=(--mem="$mem"); fi
scan="$(sbatch "${scan_opts[@]}" "${extra[@]}" "$here/scan-array.sbatch")"
scan="${scan%%;*}"
echo "scan $scan"
merge="$(sbatch --parsable --dependency="afterok:$scan" --kill-on-invalid-dep=yes \
  --cpus-per-task=1 --chdir="$work" --output="$work/logs/merge.log" "${extra[@]}" \
  "$here/merge.sbatch")"
merge="${merge%%;*}"
echo "merge $merge"
