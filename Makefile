# The README's two commands: `make demo` and `make test`. Both install what they
# need (Debian packages, .venv) and are fast when everything is already there.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint unit clean

setup:
	@./scripts/setup.sh

demo: setup
	@./scripts/demo.sh

lint: setup
	$(BIN)/ruff check gitnetdiag tests benchmarks scripts
	$(BIN)/mypy gitnetdiag

# Lint first (a failure stops here), then the unit tests on six workers (they wait on sleeping
# hooks and child processes, but the CLI subprocesses' start-ups make them CPU-bound too: 376 s
# on four, 323 s on eight with 10 min of CPU on this 2-core machine, 2026-12-02), then the lab
# tests in three lanes (tests/conftest.py): one test that waits (a CPU quota, a sleep, a stall
# timeout) and one whose transfers fail (a status, a timeout, a dead port) beside one that
# measures rates, never two that measure. The two parts run one after the other: run at once
# (the unit tests at nice 19, 2026-12-03), three fresh-clone runs took 17-20 min in all but
# failed 3, 2 and 4 tests, each a time bound or a rate the other part's load bent (a unit
# test's loopback server starved 12 s at nice 19; a fix-gain run's fixed push 2.3 s long).
# Both test parts always run; the target fails when either did. Each part lists its slowest
# tests, the lab part each lane's summed time; the last lines give each part's exit code and
# time.
LINT := $(BIN)/ruff check gitnetdiag tests benchmarks scripts && $(BIN)/mypy gitnetdiag

# This machine's environment sets PYTHONDONTWRITEBYTECODE: pytest then rewrites every test
# module's assertions again in each of its nine workers (a collection: 12.3 s of CPU without
# its cache, 4.2 s with it, 2026-12-03). The test recipes let it keep that cache (in the
# __pycache__ directories setup made, ignored by git); one collection beside the lint fills it.
unexport PYTHONDONTWRITEBYTECODE
WARM := $(BIN)/pytest -q -p no:cacheprovider --collect-only >/dev/null 2>&1

test: setup
	@t0=$$(date +%s); \
	$(WARM) & warm=$$!; \
	$(LINT) || exit 1; lint=0; wait $$warm; t1=$$(date +%s); \
	$(BIN)/pytest -q -p no:cacheprovider -m "not lab" -n 6 --durations=10; unit=$$?; t2=$$(date +%s); \
	$(BIN)/pytest -q -p no:cacheprovider -m lab -n 3 --dist loadgroup --durations=15; lab=$$?; t3=$$(date +%s); \
	part() { printf 'make test: %-10s exit %s  %3dm%02ds\n' "$$1" "$$2" $$(($$3 / 60)) $$(($$3 % 60)); }; \
	part lint $$lint $$((t1 - t0)); part unit $$unit $$((t2 - t1)); \
	part lab $$lab $$((t3 - t2)); part total - $$((t3 - t0)); \
	test $$lint -eq 0 -a $$unit -eq 0 -a $$lab -eq 0

unit: setup
	$(BIN)/pytest -q -p no:cacheprovider -m "not lab"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
