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

# Lint first (a failure stops here), then the unit tests and the lab tests at once. The lab
# tests run in three lanes (tests/conftest.py): one test that waits (a CPU quota, a sleep, a
# stall timeout) and one whose transfers fail (a status, a timeout, a dead port) beside one
# that measures rates, never two that measure. The unit tests (CPU-bound: 9 min of CPU, the
# CLI subprocesses' start-ups) run beside them at nice 19, so they take only the CPU the lab
# leaves idle (its lanes mostly wait on delays, sleeps and timeouts): measured 2026-12-03 on
# this 2-core machine, the two parts one after the other took 5m22 + 18m17; at once, the unit
# part (4 workers) ended after 7m50 inside the lab's 18m32, every test passing. The unit part's
# output is printed when both are done. Both test parts always run; the target fails when
# either did. Each part lists its slowest tests, the lab part each lane's summed time; the
# last lines give each part's exit code and time.
LINT := $(BIN)/ruff check gitnetdiag tests benchmarks scripts && $(BIN)/mypy gitnetdiag

test: setup
	@t0=$$(date +%s); \
	$(LINT) || exit 1; lint=0; t1=$$(date +%s); \
	log=$$(mktemp /tmp/gitnetdiag-unit.XXXXXX); \
	( nice -n 19 $(BIN)/pytest -q -p no:cacheprovider -m "not lab" -n 3 --durations=10 \
	  >"$$log" 2>&1; echo "$$? $$(date +%s)" >"$$log.rc" ) & unitpid=$$!; \
	$(BIN)/pytest -q -p no:cacheprovider -m lab -n 3 --dist loadgroup --durations=15; lab=$$?; t3=$$(date +%s); \
	wait $$unitpid; echo "---- unit tests (run beside the lab tests at nice 19) ----"; cat "$$log"; \
	read unit t2 <"$$log.rc" || { unit=1; t2=$$t3; }; rm -f "$$log" "$$log.rc"; \
	part() { printf 'make test: %-10s exit %s  %3dm%02ds\n' "$$1" "$$2" $$(($$3 / 60)) $$(($$3 % 60)); }; \
	part lint $$lint $$((t1 - t0)); part unit $$unit $$((t2 - t1)); \
	part lab $$lab $$((t3 - t1)); part total - $$(($$(date +%s) - t0)); \
	test $$lint -eq 0 -a $$unit -eq 0 -a $$lab -eq 0

unit: setup
	$(BIN)/pytest -q -p no:cacheprovider -m "not lab"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
