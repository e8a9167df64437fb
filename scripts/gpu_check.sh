#!/usr/bin/env bash
# One command that checks swar_bench on one CUDA GPU in under 8 minutes and prints a summary:
#   1. pytest -m cuda: fla's Triton kernels against the torch forms (forward and backward)
#   2. swar-bench fit with configs/fsdp_cuda.yaml for 50 optimizer steps
#   3. training tokens/s of GatedDeltaNet (d_model 1024, T 4096): fla path vs torch path, a ratio
#   4. the referee's default config (configs/referee/default.yaml) on its first two ranges
# Each step runs under its own time limit (120 + 90 + 90 + 150 s = 7.5 min); a step over its
# limit is reported as TIMEOUT and the next one runs. Logs go to OUT/<step>.log.
#
# usage: scripts/gpu_check.sh [--out DIR] [--python PYTHON] [--dry-run] [-h | --help]
#   --out DIR        where logs, the fit run and the referee result go (default runs/gpu_check)
#   --python PYTHON  the interpreter with swar_bench installed (default: .venv/bin/python if
#                    present, else python)
#   --dry-run        print the four commands with their time limits and exit, running nothing
# Exit status: 0 when every step passed, 1 when one failed or timed out, 2 on bad usage or when
# torch sees no CUDA device.
set -u

OUT=runs/gpu_check
PYTHON=""
DRY_RUN=0
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || { echo "gpu_check: --out needs a folder" >&2; exit 2; }; OUT=$2; shift 2 ;;
        --python) [ $# -ge 2 ] || { echo "gpu_check: --python needs an interpreter" >&2; exit 2; }; PYTHON=$2; shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "gpu_check: unknown option '$1' (expected --out DIR, --python PYTHON, --dry-run or --help)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 2
if [ -z "$PYTHON" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python; fi
fi

STEPS=(pytest_cuda fit_fsdp bench_fla_vs_torch referee_two_ranges)
declare -A LIMIT=([pytest_cuda]=120 [fit_fsdp]=90 [bench_fla_vs_torch]=90 [referee_two_ranges]=150)
step_command() {  # the command of step $1, as the array CMD (each argument one word: no splitting, no globbing)
    case $1 in
        pytest_cuda) CMD=("$PYTHON" -m pytest -m cuda -q -p no:cacheprovider tests) ;;
        fit_fsdp) CMD=("$PYTHON" -m swar_bench.cli fit --config configs/quickstart.yaml --config configs/fsdp_cuda.yaml
                       --trainer.max_steps 50 --trainer.max_time null --trainer.val_check_interval 50
                       --trainer.limit_val_batches 2 --trainer.logger.init_args.save_dir "$OUT/fit") ;;
        bench_fla_vs_torch) CMD=("$PYTHON" benchmarks/bench_training.py --device cuda --mechanisms GatedDeltaNet
                                 --backends torch,fla --d-model 1024 --n-heads 8 --seq-len 4096 --batch-size 4
                                 --warmup 2 --repeats 5 --bf16) ;;
        referee_two_ranges) CMD=("$PYTHON" -m swar_bench.cli referee --config configs/referee/default.yaml
                                 --ranges '[1000,10000]' --device cuda --out "$OUT/referee") ;;
    esac
}
shown() {  # the command CMD quoted as a shell reads it back ('[1000,10000]' stays one literal word)
    local word out=()
    for word in "${CMD[@]}"; do
        if [[ $word =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then out+=("$word"); else out+=("$(printf '%q' "$word")"); fi
    done
    echo "${out[*]}"
}

if [ "$DRY_RUN" = 1 ]; then
    for s in "${STEPS[@]}"; do step_command "$s"; echo "$s (limit ${LIMIT[$s]} s): $(shown)"; done
    exit 0
fi
if ! "$PYTHON" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu_check: torch (via $PYTHON) sees no CUDA device; this check needs one GPU" >&2
    exit 2
fi
mkdir -p "$OUT" || exit 2

declare -A STATUS SECONDS_USED NOTE
for s in "${STEPS[@]}"; do
    step_command "$s"
    echo "== $s (limit ${LIMIT[$s]} s): $(shown)"
    start=$(date +%s)
    timeout --signal=TERM --kill-after=10 "${LIMIT[$s]}" "${CMD[@]}" > "$OUT/$s.log" 2>&1
    rc=$?
    SECONDS_USED[$s]=$(( $(date +%s) - start ))
    case $rc in
        0) STATUS[$s]=PASS ;;
        124|137) STATUS[$s]=TIMEOUT ;;
        *) STATUS[$s]="FAIL (exit $rc)" ;;
    esac
    case $s in
        pytest_cuda) NOTE[$s]=$(grep -E "passed|failed|error" "$OUT/$s.log" | tail -1) ;;
        bench_fla_vs_torch) NOTE[$s]=$(grep -E "^ratio " "$OUT/$s.log" | tail -1) ;;
        *) NOTE[$s]=$(grep -v '^\s*$' "$OUT/$s.log" | tail -1 | cut -c1-160) ;;
    esac
    tail -3 "$OUT/$s.log"
done

echo
echo "gpu_check summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), logs in $OUT)"
failed=0
for s in "${STEPS[@]}"; do
    printf '%-20s %-14s %4ss  %s\n' "$s" "${STATUS[$s]}" "${SECONDS_USED[$s]}" "${NOTE[$s]}"
    [ "${STATUS[$s]}" = PASS ] || failed=1
done
exit $failed
