# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
# the `slurm` extra of pyproject.toml (`make test-slurm` installs it when missing)
SUBMITIT ?= submitit>=1.5
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# pytest-xdist processes of `make test` (most tests wait on a child process: 2 on 2 cores);
# `make test TEST_WORKERS=0` runs the suite in one process. `--dist worksteal`: a worker that
# runs out of tests takes the other's, so one long test late in the run does not leave a core idle.
TEST_WORKERS ?= 2

.PHONY: demo test test-slurm browser install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Install the pinned CPU torch first when torch is absent, so the `torch>=2.4`
# requirement does not pull a multi-GB CUDA build. `demo` needs the runtime dependencies only;
# `test` adds the `test` extra (pytest, pytest-xdist, hypothesis, ruff, fla-core + triton for the reference tests).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(TEST_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/swar-bench demo

test: $(TEST_STAMP)
	@echo "make test: the whole suite in $(TEST_WORKERS) processes (pytest-xdist), about 12 minutes on 2 idle cores (longer beside other work); each line ends with the % done"
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=5

# A real SLURM cluster on this machine (installs slurmctld, slurmd, slurm-client and munge when
# missing; needs root) runs scripts/slurm/fit.sbatch (DDP, a USR1 requeue and a plain requeue)
# and `swar-bench study run --launcher slurm` (job arrays through submitit, the `slurm` extra).
test-slurm: $(STAMP)
	$(BIN)/python -c "import submitit" 2>/dev/null || $(BIN)/pip install --quiet "$(SUBMITIT)"
	VENV="$(abspath $(VENV))" bash scripts/slurm/integration_test.sh

# Headless Chromium and chromedriver (Debian packages; installed when missing, needs root) for the
# results-site browser test in `make test` (skipped, saying so, where no chromium is installed).
browser:
	bash scripts/install_browser.sh

clean:
	rm -rf $(VENV) build *.egg-info
