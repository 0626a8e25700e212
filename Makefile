# The two commands a fresh machine needs: `make run` and `make test`.
# Each creates .venv and installs the project with its dev extra (rg comes from the ripgrep wheel).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE

.PHONY: run test test-under-load lint typecheck unit bench bench-peers-deps clean system-deps lsp-servers conformance

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# A real tool call on this repository: where are the tools defined?
run: $(STAMP)
	$(PY) -m cmd.tools grep '{"pattern": "^class \\w+Tool\\(Tool\\)", "path": "internal/llm/tools"}'
	@echo "The commands are in .venv: 'source .venv/bin/activate' puts toolsmith and toolsmith-mcp on PATH (or run .venv/bin/toolsmith)."

test: lint typecheck unit

# The same suite with every core busy (one CPU-bound process per core, stopped afterwards): how a
# loaded CI machine runs it. Nothing in the suite may depend on the machine being idle.
LOAD_PROCS ?= $(shell nproc 2>/dev/null || echo 2)
test-under-load: $(STAMP)
	@pids=""; for i in $$(seq $(LOAD_PROCS)); do $(PY) -c "while True: pass" & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	echo "running the suite with $(LOAD_PROCS) CPU-bound processes beside it"; \
	$(MAKE) --no-print-directory test

# bubblewrap (the bash sandbox, and its tests) is a system package: installed here when missing
# and we can (root with apt-get); otherwise a note, and the sandbox tests say what is missing.
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (apt-get)"; \
	    apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null; }; \
	  else echo "note: install bubblewrap (e.g. apt-get install bubblewrap) for the bash sandbox"; fi; }

lint: $(STAMP)
	$(PY) -m ruff check .

# mypy cannot see through the editable install's import hook; it checks internal/ as `agent_toolsmith`
# through a link (see [tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	@mkdir -p .typecheck && ln -sfn ../internal .typecheck/agent_toolsmith
	$(PY) -m mypy

# pytest exits 5 when it collects nothing: that is a broken suite here, never a pass.
# typescript-language-server (with TypeScript 5: 7 has no tsserver.js) for the LSP tests, from
# npm into a project-local directory; skipped with a note when npm is missing.
LSP_DIR := .lsp-servers
$(LSP_DIR)/.installed:
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(LSP_DIR) typescript@5 typescript-language-server@5 \
	  && touch $@; \
	else echo "note: npm not found; the typescript-language-server tests will be skipped"; fi

lsp-servers: $(LSP_DIR)/.installed

# The products whose tool shapes the profiles offer, pinned (docs/profiles.md), for
# tests/test_conformance.py: Claude Code's tool declarations (sdk-tools.d.ts) and Gemini CLI's
# (run with node, with the three modules they import, at the versions gemini-cli-core pins).
# `npm pack` fetches each package alone: installing them would pull in a 400 MB native binary and
# a large dependency tree the tests do not need. Without npm the test says what is missing
# (and fails under CI=true).
CONFORMANCE_DIR := .conformance
CLAUDE_SDK := @anthropic-ai/claude-agent-sdk@0.3.332
GEMINI_CORE := @google/gemini-cli-core@0.61.0
GEMINI_CORE_DEPS := zod@3.25.76 zod-to-json-schema@3.25.1 @google/genai@1.30.0
$(CONFORMANCE_DIR)/.installed: Makefile
	@if command -v npm >/dev/null 2>&1; then \
	  rm -rf $(CONFORMANCE_DIR) && mkdir -p $(CONFORMANCE_DIR)/packs \
	  && (cd $(CONFORMANCE_DIR)/packs && npm pack --silent $(CLAUDE_SDK) $(GEMINI_CORE) >/dev/null) \
	  && npm install --silent --no-audit --no-fund --ignore-scripts --omit=optional --no-package-lock \
	       --prefix $(CONFORMANCE_DIR) $(GEMINI_CORE_DEPS) \
	  && for pack in $(CONFORMANCE_DIR)/packs/*.tgz; do \
	       name=$$(tar -xzOf $$pack package/package.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])') \
	       && mkdir -p $(CONFORMANCE_DIR)/node_modules/$$name \
	       && tar -xzf $$pack -C $(CONFORMANCE_DIR)/node_modules/$$name --strip-components=1 || exit 1; \
	     done \
	  && touch $@; \
	else echo "note: npm not found; the profile conformance tests cannot read the products' declarations"; fi

conformance: $(CONFORMANCE_DIR)/.installed

unit: $(STAMP) system-deps lsp-servers conformance
	@$(PY) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: the suite is misconfigured"; fi; \
	exit $$rc

# Every ratio of the benchmark table (docs/benchmarks.md), end to end through Session.run or the CLI;
# `make bench BENCH=edit_scale.py` runs one script. Exits non-zero when a row is over its goal.
bench: $(STAMP) bench-peers-deps
	$(PY) bench/run_all.py $(BENCH)

# Peer tool suites for bench/peers.py only (never `make test`): the MCP reference filesystem server
# and pi's coding-agent tools, pinned, from npm into .bench/peers/. Nothing here fails the bench:
# without npm or the registry, bench/peers.py says the peers are missing and prints no rows.
PEERS_DIR := .bench/peers
PEER_PACKAGES := @modelcontextprotocol/server-filesystem@2026.8.31 @mariozechner/pi-coding-agent@0.73.1
$(PEERS_DIR)/.installed:
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p $(PEERS_DIR) && npm install --silent --no-audit --no-fund --prefix $(PEERS_DIR) $(PEER_PACKAGES) \
	  && touch $@ || echo "note: npm could not install the peer tool suites; bench/peers.py will skip them"; \
	else echo "note: npm not found; bench/peers.py will skip the peer tool suites"; fi

bench-peers-deps: $(PEERS_DIR)/.installed

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .typecheck $(LSP_DIR) .bench $(CONFORMANCE_DIR)
