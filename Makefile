# The two commands a newcomer needs: `make site` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: site test lint bench goldens serve clean preflight-samples mutation

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

.venv: $(STAMP)

# The repository holds only SAMPLE evidence (signed by the committed demo root), so the site is
# built with the demo root: every sample row and page says SAMPLE. `release` uses public-good.
# With the qualification timeline (cached per commit under .cache/timeline/: the first build
# computes every commit, later ones only new commits; docs/performance.md). TIMELINE=--no-timeline
# opts out (a shallow clone has no history to build it from).
TIMELINE ?= --timeline
site: $(STAMP)
	$(BIN)/aicr-catalog build --trust-root demo $(TIMELINE)

# Timing targets (perf) run after the rest, alone: a second test worker on a 2-core machine
# would be measured with them. The first stage hands out whole files (their module fixtures made
# once), the costliest first (tests/conftest.py HEAVY_FIRST; CONTRIBUTING.md, *The test suite*).
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (into the ignored __pycache__
# directories): without it every worker rewrote the asserts of all 150 test files while
# collecting (10 CPU-s each, 3.7 with the files cached) and every `python -m generator.cli`
# child compiled the modules it imports again (1.2 CPU-s each).
TEST_ENV := PYTHONDONTWRITEBYTECODE=
test: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not bench and not perf"
	$(TEST_ENV) $(BIN)/python -m pytest -p no:xdist -m "perf and not bench"

# zizmor audits the GitHub workflows offline, with its default and its pedantic persona.
lint: $(STAMP)
	$(BIN)/ruff check generator tests
	$(BIN)/ruff format --check generator tests
	$(BIN)/mypy
	$(BIN)/zizmor --offline --no-progress .github/workflows
	$(BIN)/zizmor --offline --no-progress --persona pedantic .github/workflows

# Mutation check of the trust-critical modules (tests/mutation/modules.toml; CONTRIBUTING.md):
# each mutant against its module's tests, in scratch copies of the tree. Not part of `test`.
# MODULES=safeio,policy runs some modules only; JOBS=1 on a machine shared with other work.
MODULES ?=
JOBS    ?= 2
mutation: $(STAMP)
	$(BIN)/python -m tests.mutation --modules "$(MODULES)" --jobs $(JOBS)

bench: $(STAMP)
	$(BIN)/python -m pytest -m bench -s -p no:xdist

# After a catalog change: re-sign the sample evidence for the new digests, then rewrite every
# golden file. Review both as a diff before committing.
goldens: $(STAMP)
	$(BIN)/aicr-catalog samples generate
	$(BIN)/python -m pytest tests --update-goldens -p no:xdist -m "not bench"

serve: $(STAMP)
	$(BIN)/aicr-catalog serve

clean:
	rm -rf site .cache build

# Preflight on the sample snapshots, for the seed recipe (gb300-eks-ubuntu-training-slurm) and
# its non-Slurm parent, at both scale profiles: the healthy snapshots pass (0), each defect variant
# is classified (1 = catalog-owned defect, 3 = infrastructure prerequisite unmet). Run on every
# pull request.
SNAP := catalog/scale/snapshots
PREFLIGHT_RECIPES := gb300-eks-ubuntu-training-slurm gb300-eks-ubuntu-training
preflight-samples: $(STAMP)
	@set -e; check() { set +e; $(BIN)/aicr-catalog preflight --recipe $$1 \
	    --scale-profile $$2 --snapshot $(SNAP)/$$3.yaml >/dev/null; rc=$$?; set -e; \
	  if [ $$rc -ne $$4 ]; then echo "preflight $$1 $$2 $$3: exit $$rc, expected $$4"; exit 1; fi; \
	  echo "preflight $$1 $$2 $$3: exit $$rc as expected"; }; \
	for r in $(PREFLIGHT_RECIPES); do \
	  check $$r standard gb300-eks-36-healthy 0; check $$r standard gb300-eks-36-catalog-defect 1; \
	  check $$r standard gb300-eks-36-infra-defect 3; check $$r nvl72-2304 gb300-eks-2304-healthy 0; \
	  check $$r nvl72-2304 gb300-eks-2304-catalog-defect 1; \
	  check $$r nvl72-2304 gb300-eks-2304-infra-defect 3; \
	done; \
	$(BIN)/aicr-catalog snapshot --from tests/fixtures/kubectl/gb300-eks-36 \
	  -o .cache/preflight-samples/gb300-eks-36-collected.yaml 2>/dev/null; \
	SNAP=.cache/preflight-samples; \
	for r in $(PREFLIGHT_RECIPES); do \
	  $(BIN)/aicr-catalog preflight --recipe $$r --snapshot $$SNAP/gb300-eks-36-collected.yaml \
	    >/dev/null || { echo "preflight $$r on the snapshot collected from saved kubectl outputs failed"; exit 1; }; \
	  echo "preflight $$r standard (snapshot --from tests/fixtures/kubectl/gb300-eks-36): exit 0 as expected"; \
	done
