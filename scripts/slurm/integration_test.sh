#!/usr/bin/env bash
# `make test-slurm`: a real SLURM cluster on this machine runs scripts/slurm/fit.sbatch, unchanged,
# as a user submits it, and checks what it wrote.
#
#   1. installs the Debian packages slurmctld, slurmd, slurm-client and munge when missing
#      (apt-get; needs root), starts munged, slurmctld and slurmd in the foreground mode (-D) as
#      background processes, with their configuration, state and logs in a temporary folder;
#   2. job "plain": 2 tasks, gloo DDP on CPU; completes with max_steps, checkpoints and
#      TensorBoard events in its one run folder;
#   3. job "requeued": the same run, signalled with USR1 (what --signal=SIGUSR1@90 sends before
#      the time limit) once it has validated; it saves hpc_ckpt_1.ckpt at a batch boundary,
#      requeues itself and resumes; later requeued without a signal (scontrol requeue), it must
#      resume from the newest checkpoint (never the older hpc one); it ends at exactly max_steps,
#      validated on the same steps and with weights equal to the plain job's;
#   4. `swar-bench study run --launcher slurm` on a 4-run study (scripts/slurm/study_test.sh): one
#      fit cancelled and submitted again by a second run, one requeued by USR1 and resumed;
#   5. cancels every job of the cluster, stops the daemons by their PIDs whatever happens (a
#      trap), and removes the folder.
#
# Environment: VENV (default .venv of the checkout, what `make install` builds) is what the jobs
# run (with this checkout's code first on PYTHONPATH for the study); SLURM_TEST_TIMEOUT bounds the
# whole test (seconds, default 1800); SLURM_TEST_KEEP=1 keeps the temporary folder (logs) for a
# look after a failure; SLURM_TEST_PARTS (default "fit study") chooses the parts: fit (2, 3),
# study (4).
set -euo pipefail

LIMIT="${SLURM_TEST_TIMEOUT:-1800}"
PARTS="${SLURM_TEST_PARTS:-fit study}"
if [[ -z "${_SWAR_SLURM_TEST_BOUNDED:-}" ]]; then
    export _SWAR_SLURM_TEST_BOUNDED=1
    exec timeout --kill-after=60 "${LIMIT}" bash "$0" "$@"
fi

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "${REPO}"
export VENV="${VENV:-${REPO}/.venv}"
PYTHON="${VENV}/bin/python"
# Sequences of N=32 writes are 126-171 tokens: 2 TBPTT chunks of 100 tokens, i.e. 2 optimizer
# steps per batch; validation every 20 batches (40 steps); training ends on a validation, where
# last.ckpt is saved.
CHUNKS=2
VAL_EVERY=20
MAX_STEPS=160
DEADLINE=$((SECONDS + LIMIT - 30))

say() { echo "test-slurm: $*"; }
fail() {
    echo "test-slurm: FAILED: $*" >&2
    diagnostics >&2 || true
    exit 1
}

# ------------------------------------------------------------------------------ packages
missing=()
for cmd in munged slurmctld slurmd sbatch; do
    command -v "${cmd}" > /dev/null || missing+=("${cmd}")
done
if ((${#missing[@]})); then
    if [[ "$(id -u)" != 0 ]]; then
        echo "test-slurm: error: ${missing[*]} not installed and not root; expected root (to apt-get install slurmctld slurmd slurm-client munge) or the packages installed" >&2
        exit 2
    fi
    say "installing slurmctld slurmd slurm-client munge (missing: ${missing[*]})"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge > /dev/null
fi
[[ -x "${PYTHON}" ]] || { echo "test-slurm: error: no ${PYTHON}; expected the venv of make install (or VENV=...)" >&2; exit 2; }

# ------------------------------------------------------------------------------ the cluster
T="$(mktemp -d /tmp/swar-slurm-test.XXXXXX)"
chmod 755 "${T}"
PIDS=()
JOBS=()
DRIVERS=()  # `swar-bench study run` processes of the study part

diagnostics() {
    set +e
    echo "--- squeue / jobs"
    squeue 2>&1 | tail -5
    for job in "${JOBS[@]}"; do scontrol show job -o "${job}" 2>&1 | cut -c1-600; done
    for log in "${T}"/*.out "${T}"/slurmctld.log "${T}"/slurmd.log "${T}"/munge/munged.log; do
        [[ -f "${log}" ]] && { echo "--- ${log} (last 25 lines)"; tail -25 "${log}"; }
    done
}

cleanup() {
    local status=$?
    set +e
    trap - EXIT INT TERM
    for pid in "${DRIVERS[@]}"; do kill "${pid}" 2> /dev/null; done
    if [[ -n "${SLURM_CONF:-}" ]]; then
        # every job of this private cluster: the ones submitted here and the study's arrays
        mapfile -t queued < <(squeue -h -o %A 2> /dev/null | sort -u)
        ((${#JOBS[@]} + ${#queued[@]})) && scancel "${JOBS[@]}" "${queued[@]}" 2> /dev/null
        for _ in $(seq 30); do
            [[ -z "$(squeue -h -o %i 2> /dev/null)" ]] && break
            sleep 1
        done
    fi
    # the daemons, newest first, by the PIDs this script started
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2> /dev/null; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 20); do kill -0 "${pid}" 2> /dev/null || break; sleep 0.5; done
        kill -KILL "${pid}" 2> /dev/null
    done
    # job steps the daemons left behind carry this test's folder in their environment
    for environ in /proc/[0-9]*/environ; do
        pid="${environ#/proc/}"; pid="${pid%/environ}"
        [[ "${pid}" == "$$" ]] && continue
        if tr '\0' '\n' 2> /dev/null < "${environ}" | grep -qxF "SLURM_CONF=${T}/slurm.conf"; then
            kill -KILL "${pid}" 2> /dev/null
        fi
    done
    wait 2> /dev/null
    if [[ "${SLURM_TEST_KEEP:-}" == 1 ]]; then
        echo "test-slurm: kept ${T}" >&2
    else
        rm -rf "${T}"
    fi
    exit "${status}"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

wait_until() {  # wait_until WHAT SECONDS COMMAND...: poll COMMAND every POLL seconds (default 1)
    local what="$1" limit=$((SECONDS + $2)); shift 2
    ((limit > DEADLINE)) && limit=${DEADLINE}
    until "$@"; do
        ((SECONDS < limit)) || fail "timed out waiting for ${what}"
        sleep "${POLL:-1}"
    done
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

HOST="$(hostname -s)"
mkdir -p "${T}/munge" "${T}/state" "${T}/spool" "${T}/runs"
chmod 755 "${T}/munge"  # clients reach the socket through it
dd if=/dev/urandom of="${T}/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "${T}/munge/munge.key"
SOCKET="${T}/munge/munge.socket"
munged --foreground --force --socket="${SOCKET}" --key-file="${T}/munge/munge.key" \
    --pid-file="${T}/munge/munged.pid" --log-file="${T}/munge/munged.log" --seed-file="${T}/munge/munged.seed" \
    > "${T}/munge/munged.stdout" 2>&1 &
PIDS+=($!)
wait_until "munged's socket" 30 test -S "${SOCKET}"

NODE="$(slurmd -C | head -1)"  # NodeName=<host> CPUs=... RealMemory=... as slurmd sees the machine
cat > "${T}/slurm.conf" << EOF
ClusterName=swarbench
SlurmctldHost=${HOST}(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# a requeued job may start again once the old job's credential expired (default 120 s)
AuthInfo=socket=${SOCKET},cred_expire=${SLURM_TEST_CRED_EXPIRE:-15}
StateSaveLocation=${T}/state
SlurmdSpoolDir=${T}/spool
SlurmctldPidFile=${T}/slurmctld.pid
SlurmdPidFile=${T}/slurmd.pid
SlurmctldLogFile=${T}/slurmctld.log
SlurmdLogFile=${T}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=10
MinJobAge=600
${NODE} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="${T}/slurm.conf"
slurmctld -D -i -f "${SLURM_CONF}" > "${T}/slurmctld.stdout" 2>&1 &
PIDS+=($!)
slurmd -D -f "${SLURM_CONF}" > "${T}/slurmd.stdout" 2>&1 &
PIDS+=($!)
node_idle() { [[ "$(sinfo -h -n "${HOST}" -o %t 2> /dev/null)" == idle ]]; }
wait_until "node ${HOST} idle" 90 node_idle
say "cluster up in ${SECONDS} s: $(sinfo -h -o '%P %D %t %c CPUs')"

# ------------------------------------------------------------------------------ helpers
job_field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
job_done() {  # true once job $1 ended; fails the test when it ended other than COMPLETED
    local state
    state="$(job_field "$1" JobState)"
    case "${state}" in
        COMPLETED) return 0 ;;
        FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
            fail "job $1 ended ${state} ($(job_field "$1" Reason))" ;;
    esac
    return 1
}
step_of() { "${PYTHON}" scripts/slurm/check_run.py step "$1"; }
restored() {  # restored LOG N: the checkpoint restart N of the job restored ("" before it did)
    sed -n "/(restart $2) on/,\$p" "$1" | sed -n 's/^Restoring states from the checkpoint path at //p' | head -1
}
has_restored() { [[ -n "$(restored "$1" "$2")" ]]; }
saved_step() {  # the global step of the newest checkpoint ModelCheckpoint kept (epoch=E-step=S.ckpt), else -1
    local best=-1 file step
    for file in "$1"/checkpoints/epoch=*-step=*.ckpt; do
        [[ -f "${file}" ]] || continue
        step="${file##*-step=}"; step="${step%.ckpt}"
        ((step > best)) && best="${step}"
    done
    echo "${best}"
}
saved_above() { (($(saved_step "$1") > $2)); }
validated_above() {  # validated_above RUN STEP: a step checkpoint above STEP, and last.ckpt written after it
    local newest="$1/checkpoints/epoch=0-step=$(saved_step "$1").ckpt"
    saved_above "$1" "$2" && [[ -f "$1/checkpoints/last.ckpt" && ! "${newest}" -nt "$1/checkpoints/last.ckpt" ]]
}

job_tasks() {  # job_tasks JOB: the PIDs of job JOB's swar-bench processes (its srun tasks) on this node
    local environ pid
    for environ in /proc/[0-9]*/environ; do
        pid="${environ#/proc/}"; pid="${pid%/environ}"
        tr '\0' ' ' 2> /dev/null < "/proc/${pid}/cmdline" | grep -qF "swar-bench fit" || continue
        tr '\0' '\n' 2> /dev/null < "${environ}" | grep -qxF "SLURM_JOB_ID=$1" && echo "${pid}"
    done
    return 0
}

run_folder() { echo "${T}/runs/quickstart/GRU/slurm_$1"; }  # logger save_dir/name/Mechanism/version

submit() {  # submit NAME: prints the job id
    sbatch --parsable --job-name="$1" --nodes=1 --ntasks-per-node=2 --gpus-per-node=0 \
        --cpus-per-task=1 --time=00:20:00 --output="${T}/%x-%j.out" \
        scripts/slurm/fit.sbatch \
        --trainer.logger.init_args.save_dir="${T}/runs" --trainer.accelerator=cpu --model.mechanism=GRU --model.mechanism.init_args.d_model=16 \
        --model.tbptt_steps=100 --data.batch_size=4 --data.eval_examples=8 \
        --trainer.max_steps="${MAX_STEPS}" --trainer.val_check_interval="${VAL_EVERY}" \
        --trainer.log_every_n_steps=5 --trainer.enable_progress_bar=false
}

checkout_files() {  # what git sees in the checkout, ignored files included (not Python's caches)
    git status --porcelain --ignored 2> /dev/null | grep -v "__pycache__/$" || true
}
before="$(checkout_files)"

if [[ " ${PARTS} " == *" fit "* ]]; then
# ------------------------------------------------------------------------------ the jobs (one after the other: 2 CPUs)
plain_job="$(submit plain)"
JOBS+=("${plain_job}")
PLAIN="$(run_folder "${plain_job}")"
job="$(submit requeued)"
JOBS+=("${job}")
REQ="$(run_folder "${job}")"
LOG="${T}/requeued-${job}.out"
say "jobs ${plain_job} (plain) and ${job} (requeued) submitted"

# ------------------------------------------------------------------------------ job "requeued"
POLL=0.1 wait_until "job ${job}'s first validation checkpoint" 300 saved_above "${REQ}" 0
usr1_step="$(saved_step "${REQ}")"
scancel --signal=USR1 "${job}"
say "job ${job}: USR1 sent after its checkpoint at step ${usr1_step}"
# The job's last 120 steps take a few seconds, less than a loaded machine may take to poll, start a
# Python process and requeue: its training processes are frozen (SIGSTOP) as soon as it has
# validated after its resume, before anything slow runs (slurmd sends every process of a job
# SIGCONT before SIGTERM when it ends it). The step of the USR1 checkpoint is read from the job's
# log (no Python start): a validation checkpoint after it comes from the resumed run.
POLL=0.1 wait_until "job ${job} to resume after USR1 (restart 1)" 300 has_restored "${LOG}" 1
saved_at="$(sed -n 's/^requeue signal: saved .* at global step \([0-9]*\)$/\1/p' "${LOG}" | head -1)"
[[ -n "${saved_at}" ]] || fail "job ${job}: its log does not say at which step the USR1 checkpoint was saved"
POLL=0.05 wait_until "job ${job} to validate after its resume" 300 validated_above "${REQ}" "${saved_at}"
mapfile -t tasks < <(job_tasks "${job}")
((${#tasks[@]})) || fail "job ${job}: no swar-bench process found to freeze before scontrol requeue"
kill -STOP "${tasks[@]}"
last_step="$(saved_step "${REQ}")"
((last_step < MAX_STEPS)) || fail "job ${job} had ended (step ${last_step}) before it could be frozen: nothing to requeue"
scontrol requeue "${job}"
say "job ${job}: requeued without a signal at last.ckpt step ${last_step} (its ${#tasks[@]} swar-bench processes frozen first)"
HPC="${REQ}/checkpoints/hpc_ckpt_1.ckpt"
[[ -f "${HPC}" ]] || fail "no ${HPC} after the USR1 requeue"
hpc_step="$(step_of "${HPC}")"
((hpc_step % CHUNKS == 0)) || fail "hpc_ckpt_1.ckpt at global step ${hpc_step}: not a batch boundary (${CHUNKS} steps per batch)"
((hpc_step == saved_at)) || fail "hpc_ckpt_1.ckpt holds global step ${hpc_step}; the log said ${saved_at}"
((last_step > hpc_step)) || fail "the validation checkpoint after the resume is at step ${last_step}, not after hpc_ckpt_1.ckpt (${hpc_step})"
line="$(restored "${LOG}" 1)"
[[ "${line}" == "${HPC}" ]] || fail "restart 1 did not resume from ${HPC}: '${line}'"
say "job ${job}: restart 1 resumed from hpc_ckpt_1.ckpt (global step ${hpc_step})"
wait_until "job ${job} to resume after scontrol requeue (restart 2)" 300 has_restored "${LOG}" 2
line="$(restored "${LOG}" 2)"
[[ "${line}" != "${HPC}" ]] || fail "restart 2 went back to hpc_ckpt_1.ckpt (step ${hpc_step}) though last.ckpt was at step ${last_step}"
# The job was frozen at step ${last_step} < MAX_STEPS, with last.ckpt written at that step: restart 2
# must resume from it (or the step checkpoint of the same step), never from the older hpc one. Its
# step is not read from the file now: the resumed run rewrites last.ckpt as it goes on. The final
# check (the same weights as the plain job) shows that the resume was exact.
[[ "${line}" == "${REQ}/checkpoints/last.ckpt" || "${line}" == "${REQ}/checkpoints/epoch=0-step=${last_step}.ckpt" ]] \
    || fail "restart 2 resumed from '${line}', expected last.ckpt at step ${last_step}"
resumed_step="${last_step}"
say "job ${job}: restart 2 resumes from global step ${resumed_step} (${line##* })"

# ------------------------------------------------------------------------------ job "plain"
wait_until "job ${plain_job} (plain) to complete" 300 job_done "${plain_job}"
steps="$(step_of "${PLAIN}/checkpoints/last.ckpt")"
[[ "${steps}" == "${MAX_STEPS}" ]] || fail "plain job: last.ckpt at global step ${steps}, expected ${MAX_STEPS}"
# TensorBoard's step of a validation is the count of training batches before it, minus one
expected_val="$(seq -s ' ' $((VAL_EVERY - 1)) "${VAL_EVERY}" $((MAX_STEPS / CHUNKS)))"
validated="$("${PYTHON}" scripts/slurm/check_run.py steps "${PLAIN}" val/loss)"
[[ "${validated}" == "${expected_val}" ]] || fail "plain job validated at logger steps '${validated}', expected '${expected_val}'"
layout="$("${PYTHON}" scripts/slurm/check_run.py layout "${PLAIN}")" || fail "plain job: ${layout}"
[[ "$(readlink "${PLAIN}/slurm.out")" == "${T}/plain-${plain_job}.out" ]] \
    || fail "plain job: slurm.out links to '$(readlink "${PLAIN}/slurm.out")', expected its output file"
say "job ${plain_job} (plain): COMPLETED at step ${steps}; validated at ${validated}; ${layout}"

wait_until "job ${job} (requeued) to complete" 400 job_done "${job}"
[[ "$(job_field "${job}" Restarts)" == 2 ]] || fail "job ${job} restarted $(job_field "${job}" Restarts) times, expected 2"
steps="$(step_of "${REQ}/checkpoints/last.ckpt")"
[[ "${steps}" == "${MAX_STEPS}" ]] || fail "requeued job: last.ckpt at global step ${steps}, expected ${MAX_STEPS}"
validated="$("${PYTHON}" scripts/slurm/check_run.py steps "${REQ}" val/loss)"
[[ "${validated}" == "${expected_val}" ]] || fail "requeued job validated at logger steps '${validated}', expected '${expected_val}'"
same="$("${PYTHON}" scripts/slurm/check_run.py same-weights "${PLAIN}/checkpoints/last.ckpt" "${REQ}/checkpoints/last.ckpt")" \
    || fail "requeued job's final weights differ from the plain job's: ${same}"
layout="$("${PYTHON}" scripts/slurm/check_run.py layout "${REQ}")" || fail "requeued job: ${layout}"
stops="$(grep -c "^swar-bench: stopped by SIGTERM" "${LOG}" || true)"
((stops <= 2)) || fail "${stops} stop messages for 2 interruptions: printed by more than rank 0"
runs="$(cd "${T}/runs" && find . -mindepth 1 -maxdepth 3 -type d | sort | tr '\n' ' ')"
[[ "${runs}" == "./quickstart ./quickstart/GRU ./quickstart/GRU/slurm_${plain_job} ./quickstart/GRU/slurm_${job} " ]] \
    || fail "run folders: ${runs}; expected one per job"
after="$(checkout_files)"
[[ "${before}" == "${after}" ]] || fail "the jobs wrote into the checkout: $(diff <(echo "${before}") <(echo "${after}") | tail -3)"
say "job ${job} (requeued): COMPLETED at step ${steps}, 2 restarts; validated at ${validated}; final weights: ${same}; ${layout}"
fi

# ------------------------------------------------------------------------------ the study launcher
if [[ " ${PARTS} " == *" study "* ]]; then
    "${PYTHON}" -c "import submitit" 2> /dev/null \
        || { echo "test-slurm: error: submitit is not installed in ${VENV}; expected pip install -e '.[slurm]' (make test-slurm does)" >&2; exit 2; }
    # shellcheck source=scripts/slurm/study_test.sh
    source scripts/slurm/study_test.sh
fi
say "passed in ${SECONDS} s"
