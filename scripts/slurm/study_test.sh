# `make test-slurm`, part 2 (sourced by scripts/slurm/integration_test.sh, on its cluster, with its
# helpers say / fail / wait_until and its folder T): `swar-bench study run --launcher slurm`.
#
# A study of 4 runs (2 mechanisms x 2 seeds at one learning rate, the first seed of each chosen
# first, every seed tested) runs as SLURM job-array tasks submitted through submitit:
#   1. `study run` (waiting, in the background) submits the two selection fits as one array;
#      fit GRU_b seed 0 is cancelled (scancel) once its training has started; fit GRU_a seed 0 is
#      sent SIGUSR1 (scancel --signal=USR1, what --signal sends before the time limit) after its
#      first validation checkpoint: it saves hpc_ckpt_1.ckpt, requeues its task, and the requeued
#      task resumes from it; the run goes on with the other seeds and the tests, then exits 1
#      naming the cancelled fit: 3 fit and 3 test records;
#   2. a second `study run` submits only the cancelled fit, then its test: 4 fit and 4 test
#      records, no failure record, no job left in the queue, `study status` says 8 done;
#   3. a third `study run` submits nothing.
[[ -n "${T:-}" && -n "${SLURM_CONF:-}" ]] || { echo "study_test.sh: run by scripts/slurm/integration_test.sh" >&2; exit 2; }

S="${T}/study"
mkdir -p "${S}"
STUDY_STEPS=80  # validation every 10 steps (curve_points 8): checkpoints from step 10, 70 steps before the end
cat > "${S}/base.yaml" << EOF
seed_everything: 0
trainer:
  accelerator: cpu
  devices: 1
  max_steps: ${STUDY_STEPS}
  check_val_every_n_epoch: null
  num_sanity_val_steps: 0
  log_every_n_steps: 5
  enable_progress_bar: false
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: runs, name: tiny}
model:
  lr: 3.0e-3
  warmup_steps: 1
  max_steps: ${STUDY_STEPS}
  tbptt_steps: 512
data:
  source: generate
  train_configs: [32]
  val_configs: [32, 64]
  test_configs: [32, 64]
  batch_size: 2
  eval_batch_size: 8
  examples_per_epoch: 1000
  eval_examples: 8
EOF
cat > "${S}/study.yaml" << EOF
name: slurm_tiny
config: ${S}/base.yaml
records: ${S}/records
out: ${S}/runs
readout_n: 64
learning_rates: [3.0e-3]
extra_learning_rates: {below: [], above: []}
selection_seeds: 1
seeds: 2
curve_points: 8
gate: {ar_valid: 0.0}
slurm: {time_min: 10, cpus_per_task: 1, signal_delay_s: 60}
mechanisms:
  - {name: GRU_a, class_path: GRU, init_args: {d_model: 8, n_layers: 1}}
  - {name: GRU_b, class_path: GRU, init_args: {d_model: 12, n_layers: 1}}
EOF
A=GRU_a_lr0.003_seed0  # signalled with USR1: requeued and resumed
B=GRU_b_lr0.003_seed0  # cancelled: submitted again by the second run
RUNS="${S}/runs"
RECORDS="${S}/records"
study() {  # the product command, from the study's folder (the jobs' submit directory), this checkout's code
    (cd "${S}" && PYTHONPATH="${REPO}${PYTHONPATH:+:${PYTHONPATH}}" "${PYTHON}" -m swar_bench.cli study "$@")
}

marker_job() { "${PYTHON}" -c 'import json, sys; print(json.load(open(sys.argv[1]))["job"])' "${RUNS}/$1.fit.slurm" 2> /dev/null; }
has_marker() { [[ -f "${RUNS}/$1.fit.slurm" ]]; }
run_pids() {  # run_pids RUN: the PIDs of the `swar-bench fit` processes of run RUN
    local cmdline pid
    for cmdline in /proc/[0-9]*/cmdline; do
        pid="${cmdline#/proc/}"; pid="${pid%/cmdline}"
        tr '\0' ' ' 2> /dev/null < "${cmdline}" | grep -q "swar_bench.cli fit .*--trainer.logger.init_args.name=$1 " && echo "${pid}"
    done
    return 0
}
training() { [[ -n "$(run_pids "$1")" ]]; }
alive() { kill -0 "$1" 2> /dev/null; }
ended() { ! alive "$1"; }
queue_empty() { [[ -z "$(squeue -h -o %i 2> /dev/null)" ]]; }
count() { find "${RECORDS}" -maxdepth 1 -name "*.$1.json" | wc -l; }
restored_from() { sed -n 's/^Restoring states from the checkpoint path at //p' "${RUNS}/$1.fit.log" 2> /dev/null | head -1; }
resumed() { [[ -f "${RUNS}/$1.fit.log.0" && -n "$(restored_from "$1")" ]]; }

# ------------------------------------------------------------------------------ run 1: cancel one, requeue one
study_start=${SECONDS}
study run "${S}/study.yaml" --launcher slurm --poll-s 1 > "${S}/run1.log" 2>&1 &
DRIVERS+=($!)
driver=$!
POLL=0.2 wait_until "the first array (fits ${A} and ${B})" 120 eval 'has_marker "${A}" && has_marker "${B}"'
job_a="$(marker_job "${A}")"
job_b="$(marker_job "${B}")"
[[ "${job_a%_*}" == "${job_b%_*}" && "${job_a}" != "${job_b}" ]] || fail "fits ${A} and ${B} are jobs ${job_a} and ${job_b}: not two tasks of one array"
say "study: run 1 submitted fits ${A} and ${B} as tasks ${job_a} and ${job_b} of one array"

POLL=0.2 wait_until "fit ${B} to start training" 180 training "${B}"
scancel "${job_b}"
say "study: cancelled task ${job_b} (fit ${B}) while it trained"

POLL=0.1 wait_until "fit ${A}'s first validation checkpoint" 180 saved_above "${RUNS}/${A}" 0
mapfile -t pids < <(run_pids "${A}")
((${#pids[@]})) || fail "fit ${A}: no swar-bench fit process found to signal"
kill -STOP "${pids[@]}"  # the rest of a tiny fit takes a second: hold it while the signal is sent
saved="$(saved_step "${RUNS}/${A}")"
scancel --signal=USR1 "${job_a}"
kill -CONT "${pids[@]}"
((saved < STUDY_STEPS)) || fail "fit ${A} had ended (checkpoint at step ${saved}) before USR1 was sent"
say "study: sent USR1 to task ${job_a} (fit ${A}) after its checkpoint at step ${saved}"
wait_until "fit ${A} to resume in its requeued task" 300 resumed "${A}"
line="$(restored_from "${A}")"
[[ "${line}" == "${RUNS}/${A}/checkpoints/hpc_ckpt_1.ckpt" ]] || fail "fit ${A} resumed from '${line}', expected its hpc_ckpt_1.ckpt"
say "study: task ${job_a} requeued itself; fit ${A} resumes from hpc_ckpt_1.ckpt (global step $(step_of "${line}"))"

wait_until "run 1 to end" 600 ended "${driver}"
set +e; wait "${driver}"; rc=$?; set -e
[[ "${rc}" == 1 ]] || fail "run 1 exited ${rc}, expected 1 (one cancelled fit): $(tail -5 "${S}/run1.log")"
grep -q "^study: fit ${B} ended CANCELLED without a record (job ${job_b})" "${S}/run1.log" \
    || fail "run 1 did not report the cancelled fit: $(grep "${B}" "${S}/run1.log" | tail -3)"
[[ "$(count fit) $(count test)" == "3 3" ]] || fail "after run 1: $(count fit) fit and $(count test) test records, expected 3 and 3"
[[ -f "${RECORDS}/${B}.failed.json" && ! -f "${RECORDS}/${B}.fit.json" ]] || fail "after run 1: no failure record of ${B}"
[[ "$(job_field "${job_a}" Restarts)" == 1 ]] || fail "task ${job_a} restarted $(job_field "${job_a}" Restarts) times, expected 1"
final="$("${PYTHON}" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["final_step"], r["gate"]["passed"])' "${RECORDS}/${A}.fit.json")"
[[ "${final}" == "$((STUDY_STEPS - 1)) True" ]] || fail "fit ${A}'s record: final step and gate '${final}', expected '$((STUDY_STEPS - 1)) True'"
curve_steps="$(cut -d, -f1 "${RECORDS}/${A}.curve.csv" | tail -n +2 | sort -nu | tr '\n' ' ')"
expected_curve="$(seq -s ' ' 9 10 $((STUDY_STEPS - 1))) "
[[ "${curve_steps}" == "${expected_curve}" ]] || fail "fit ${A}'s curve validates at steps '${curve_steps}', expected '${expected_curve}'"
queue_empty || fail "after run 1 the queue holds $(squeue -h -o %i | tr '\n' ' ')"
say "study: run 1 ended 1 (fit ${B} cancelled) with 3 fit and 3 test records in $((SECONDS - study_start)) s"

# ------------------------------------------------------------------------------ run 2: only what is missing
study run "${S}/study.yaml" --launcher slurm --poll-s 1 > "${S}/run2.log" 2>&1 &
DRIVERS+=($!)
driver=$!
wait_until "run 2 to end" 600 ended "${driver}"
set +e; wait "${driver}"; rc=$?; set -e
[[ "${rc}" == 0 ]] || fail "run 2 exited ${rc}: $(tail -5 "${S}/run2.log")"
submitted="$(sed -n 's/^study: submitted job [0-9]*: //p' "${S}/run2.log" | tr '\n' ';')"
[[ "${submitted}" == "1 task(s): fit ${B};1 task(s): test ${B};" ]] || fail "run 2 submitted '${submitted}', expected fit ${B} then test ${B}"
[[ "$(count fit) $(count test)" == "4 4" ]] || fail "after run 2: $(count fit) fit and $(count test) test records, expected 4 and 4"
[[ -z "$(find "${RECORDS}" -name '*.failed.json')" ]] || fail "after run 2: failure records $(find "${RECORDS}" -name '*.failed.json')"
[[ -z "$(find "${RUNS}" -maxdepth 1 -name '*.slurm')" ]] || fail "after run 2: markers left $(find "${RUNS}" -maxdepth 1 -name '*.slurm')"
queue_empty || fail "after run 2 the queue holds $(squeue -h -o %i | tr '\n' ' ')"
status="$(study status "${S}/study.yaml" | tail -1)"
[[ "${status}" == "study: 8 done (8 runs planned now)" ]] || fail "study status: '${status}'"
say "study: run 2 submitted only fit ${B} and its test; 4 fit and 4 test records; the queue is empty"

# ------------------------------------------------------------------------------ run 3: nothing to do
study run "${S}/study.yaml" --launcher slurm --poll-s 1 > "${S}/run3.log" 2>&1 || fail "run 3 exited $?: $(tail -3 "${S}/run3.log")"
! grep -q "^study: submitted" "${S}/run3.log" || fail "run 3 submitted: $(grep '^study: submitted' "${S}/run3.log")"
say "study: run 3 submitted nothing; the study part passed in $((SECONDS - study_start)) s"
after="$(checkout_files)"
[[ "${before}" == "${after}" ]] || fail "the study wrote into the checkout: $(diff <(echo "${before}") <(echo "${after}") | tail -3)"
