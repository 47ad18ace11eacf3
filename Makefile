# Two commands do everything on a fresh machine:
#   make demo   set up, index the example notes and search them
#   make test   set up and run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch, pinned in the same pip command as everything else:
# asked for alone (or through sentence-transformers) pip picks a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
EXAMPLE := examples/brain

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "$(TORCH)" -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/brain --root $(EXAMPLE) index --yes
	$(BIN)/brain --root $(EXAMPLE) search "progetti Laravel per la clinica"
	$(BIN)/brain --root $(EXAMPLE) search "nginx SSL certificate" --mode bm25

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) $(EXAMPLE)/.brain .pytest_cache
