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

# The unit tests on both cores; the lab tests one at a time (they measure rates and
# times, and a second live lab would share the two cores).
# Both parts always run; the target fails when either did.
test: lint
	@$(BIN)/pytest -q -p no:cacheprovider -m "not lab" -n 2; unit=$$?; \
	$(BIN)/pytest -q -p no:cacheprovider -m lab; lab=$$?; \
	echo "make test: unit tests exit $$unit, lab tests exit $$lab"; \
	test $$unit -eq 0 -a $$lab -eq 0

unit: setup
	$(BIN)/pytest -q -p no:cacheprovider -m "not lab"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
