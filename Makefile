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

test: lint
	$(BIN)/pytest -q -p no:cacheprovider

unit: setup
	$(BIN)/pytest -q -p no:cacheprovider -m "not lab"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
