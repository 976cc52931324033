# Two commands: `make demo` and `make test` (plus `make bench`). Each creates a virtual
# environment on first use from the lane's lock file, checks the system pieces the metrics
# need (Java for the METEOR / CIDEr / PTBTokenizer jars, Perl's XML::Parser for
# ROUGE-1.5.5), and reuses everything on later runs.
SHELL := /bin/bash
.DEFAULT_GOAL := test

# Three lanes, one code base (docs/install.md): `current`, the newest TensorFlow with the
# Keras 2 API from tf-keras; `gpu`, the current lane with TensorFlow's CUDA and cuDNN
# wheels (tensorflow[and-cuda]); `tf215`, TensorFlow 2.15.1 with tensorflow-addons.
LANE ?= current
ifeq ($(LANE),current)
PY_VERSIONS := 3.13 3.12 3.11 3.10
VENV ?= .venv
else ifeq ($(LANE),gpu)
PY_VERSIONS := 3.13 3.12 3.11 3.10
VENV ?= .venv-gpu
else ifeq ($(LANE),tf215)
PY_VERSIONS := 3.11 3.10 3.9
VENV ?= .venv-tf215
else
$(error LANE=$(LANE) is not a lane; use LANE=current, LANE=gpu or LANE=tf215)
endif
LOCK := requirements/$(LANE).txt

# The newest interpreter of the lane that runs, from PATH or from pyenv's versions (a pyenv
# shim of a version that is not selected exists but does not run); `make PYTHON=...`
# overrides.
PYTHON ?= $(shell for v in $(PY_VERSIONS); do \
	for p in python$$v $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v; do \
	"$$p" -c '' >/dev/null 2>&1 && { echo "$$p"; exit 0; }; done; done)
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
IN_LANE := import sys; sys.exit("%d.%d" % sys.version_info[:2] not in "$(PY_VERSIONS)".split())
# The commands quiet TensorFlow's start-up lines themselves (acvi_tf/quiet.py); a
# TF_CPP_MIN_LOG_LEVEL set here would be the user's, and bring them back.

.PHONY: test test-fast lint demo demo-captions bench bench-tfa bench-gpu venv sysdeps browser check-gpu-lock clean

venv: $(STAMP)
	@$(VPY) -c 'import acvi_tf.quiet, sys, tensorflow as tf; print("Lane $(LANE): TensorFlow %s on Python %d.%d in $(VENV); GPUs TensorFlow sees: %d" % (tf.__version__, *sys.version_info[:2], len(tf.config.list_physical_devices("GPU"))))'

$(STAMP): $(LOCK) pyproject.toml
	@if [ -x $(VPY) ] && ! $(VPY) -c '$(IN_LANE)'; then \
		echo "make: $(VENV) has a Python the $(LANE) lane does not support ($(PY_VERSIONS)); remove it (make clean) and run again." >&2; exit 1; fi
	@if [ ! -x $(VPY) ]; then \
		if [ -z "$(PYTHON)" ]; then echo "make: no Python $(PY_VERSIONS) found for the $(LANE) lane; install one, or run make PYTHON=/path/to/python3.X" >&2; exit 1; fi; \
		$(PYTHON) -c '$(IN_LANE)' || { echo "make: $(PYTHON) is not Python $(PY_VERSIONS), which the $(LANE) lane needs" >&2; exit 1; }; \
		echo "Creating $(VENV) with $(PYTHON) for the $(LANE) lane"; $(PYTHON) -m venv $(VENV) || exit 1; fi
	@echo "Installing $(LOCK) into $(VENV) (first run only; about 2 GB$(if $(filter gpu,$(LANE)), plus 3 GB of CUDA wheels))"
	$(VPY) -m pip install --quiet --disable-pip-version-check -r $(LOCK)
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# requirements/gpu.txt resolves with every dependency pinned, on this lane's Python,
# without installing or downloading its wheels: a dry run that reads each wheel's metadata
# alone, as pip 26.3 does, from a venv of its own (pip 24.2 downloads every wheel of a dry
# run, 3 GB of CUDA libraries here). fast-deps reads the metadata with HTTP range requests
# where the index does not serve it apart (PyPI does).
LOCK_CHECK := .venv-lock-check
LOCK_CHECK_PIP := $(LOCK_CHECK)/.pip-26.3
$(LOCK_CHECK_PIP):
	$(VPY) -m venv $(LOCK_CHECK)
	$(LOCK_CHECK)/bin/python -m pip install --quiet --disable-pip-version-check pip==26.3
	@touch $@

check-gpu-lock: venv $(LOCK_CHECK_PIP)
	$(LOCK_CHECK)/bin/python -m pip install --quiet --disable-pip-version-check --dry-run \
		--ignore-installed --use-feature=fast-deps -r requirements/gpu.txt
	@echo "requirements/gpu.txt resolves on $$($(VPY) -V)"

# Java runs the METEOR 1.5, CIDEr and PTBTokenizer jars; ROUGE-1.5.5 needs Perl with
# XML::Parser (DB_File ships with Debian's perl). Installed with apt when we are root on
# Debian/Ubuntu; otherwise we say what to run.
sysdeps:
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	command -v perl >/dev/null 2>&1 || missing="$$missing perl"; \
	perl -MXML::Parser -e 1 >/dev/null 2>&1 || missing="$$missing libxml-parser-perl"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing system packages:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
		else \
			echo "make: missing system packages:$$missing" >&2; \
			echo "make: install them, e.g. 'sudo apt-get install$$missing' (Debian/Ubuntu), then run make again." >&2; \
			exit 1; \
		fi; \
	fi

# Two pytest workers (pytest-xdist): most of the suite's time is single-threaded graph
# tracing. Each worker (and each process a test starts) runs TensorFlow on one thread, so
# that the two do not fight over the cores.
# The workers share the tests by ``--dist=loadgroup`` (pytest.ini) with the longest first
# (tests/scheduling.py). The reference lane runs the tests marked ``reference``
# (conftest.REFERENCE_LANE; docs/testing.md says why). `make test-fast` runs the quick
# ones (tests/scheduling.py: under 1 s in tests/durations.json) for a loop while developing.
TEST_WORKERS ?= 2
TEST_SELECT := $(if $(filter tf215,$(LANE)),-m reference)
test test-fast: export TF_NUM_INTRAOP_THREADS ?= 1
test test-fast: export TF_NUM_INTEROP_THREADS ?= 1
test: venv sysdeps browser
	@start=$$(date +%s); $(VPY) -m pytest -n $(TEST_WORKERS) $(TEST_SELECT) tests; status=$$?; \
	echo "make test ($(LANE) lane): $$(( $$(date +%s) - start )) s of wall time"; exit $$status

test-fast: venv sysdeps browser
	@start=$$(date +%s); $(VPY) -m pytest -n $(TEST_WORKERS) -m quick tests; status=$$?; \
	echo "make test-fast: $$(( $$(date +%s) - start )) s of wall time"; exit $$status

# Debian's Chromium, in which tests/test_report.py opens the decodes' report.html; where
# it cannot be installed (not root, no apt) those checks skip and say why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing system package: chromium (the report tests' browser)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || exit 1; \
		else \
			echo "make: no /usr/bin/chromium: the report tests' browser checks skip ('sudo apt-get install chromium' runs them)"; \
		fi; \
	fi

# ruff's lint and format checks, configured in pyproject.toml (`ruff format .` fixes the
# format).
lint: venv
	$(VPY) -m ruff check .
	$(VPY) -m ruff format --check .

# The main job on the shipped Debian sample: a pointer-generator with ACVI trained through
# a short curriculum (two phases, then coverage), the eval job on the validation split,
# one batched beam-search call over the whole test split scored with ROUGE-1.5.5, METEOR and the
# copying rates, the lead-1 baseline (a description's first sentence) scored the same way,
# and the TensorBoard location. Each run writes a new experiment folder under demo_logs/.
DEMO_DATA := data_prep/samples/debian_descriptions
DEMO_EXP := acvi_debian_$(shell date +%Y%m%d_%H%M%S)
DEMO_MODEL := --vocab_path=$(DEMO_DATA)/vocab --vocab_size=10000 --log_root=demo_logs \
	--exp_name=$(DEMO_EXP) --hidden_dim=128 --emb_dim=64 --context=acvi \
	--phases=0-400:30:10,400-900:80:16 --coverage_steps=100
DEMO_DECODE := --beam_size=4 --max_enc_steps=80 --max_dec_steps=20 --min_dec_steps=3 \
	--decode_batch_size=400

# Each step prints one line that says what runs.
demo: venv sysdeps
	@echo "== Training (pointer_generator.run_summarization --mode=train) in demo_logs/$(DEMO_EXP)"
	@$(VPY) -m pointer_generator.run_summarization --mode=train --optimizer=adam \
		--data_path='$(DEMO_DATA)/chunked/train_*' \
		--summary_data_path='$(DEMO_DATA)/chunked/val_*' $(DEMO_MODEL)
	@echo "== The eval job on the validation split (--mode=eval)"
	@$(VPY) -m pointer_generator.run_summarization --mode=eval --eval_max_batches=20 \
		--data_path='$(DEMO_DATA)/chunked/val_*' $(DEMO_MODEL)
	@echo "== Beam search over the test split, scored (--mode=decode --single_pass)"
	@$(VPY) -m pointer_generator.run_summarization --mode=decode --single_pass \
		--data_path='$(DEMO_DATA)/chunked/test_*' $(DEMO_MODEL) $(DEMO_DECODE)
	@echo "== The lead-1 baseline, scored the same way (pointer_generator.lead_baseline)"
	@$(VPY) -m pointer_generator.lead_baseline --num_sentences=1 \
		--data_path='$(DEMO_DATA)/chunked/test_*' --vocab_path=$(DEMO_DATA)/vocab \
		--vocab_size=10000 --out_dir=demo_logs/$(DEMO_EXP)/lead1_test
	@echo
	@echo "Test split of $(DEMO_DATA) (400 Debian descriptions -> synopses):"
	@$(VPY) -m pointer_generator.results_table \
		--column=ACVI=$$(ls -d demo_logs/$(DEMO_EXP)/decode_test_* | head -1) \
		--column=lead-1=demo_logs/$(DEMO_EXP)/lead1_test
	@echo
	@echo "Checkpoints, decoded summaries and TensorBoard logs: demo_logs/$(DEMO_EXP)/"
	@echo "View them with: $(VENV)/bin/tensorboard --logdir demo_logs/$(DEMO_EXP)"

# The captioner on generated clips, from video files to scores, by the documented MSVD
# path: 200 clips written as MSVD (videos, corpus CSV, youtube_mapping.txt), their frame
# features (GoogLeNet, randomly initialised: no weights can be downloaded here), the
# splits, training with ACVI and validation CIDEr, and beam-search captions of the test
# clips scored with BLEU-4, METEOR, ROUGE-L and CIDEr-D next to the constant caption,
# with report.html showing thumbnails of the frames each word attends to.
# 10 to 15 minutes on 2 cores, most of it feature extraction.
VC_EXP := demo_logs/captions_$(shell date +%Y%m%d_%H%M%S)
VC_MODEL := --data_dir=$(VC_EXP)/data --features=$(VC_EXP)/features --out_dir=$(VC_EXP)/acvi \
	--num_frames=8 --feature_norm=standardize --encoder_units=128 --decoder_units=128 \
	--emb_dim=64 --attention_units=64 --dropout=0.2 --learning_rate=0.005 --batch_size=32 \
	--context=acvi
demo-captions: venv sysdeps
	$(VPY) -m data_prep.moving_shapes --output_dir=$(VC_EXP)/corpus
	$(VPY) -m video_caption.features --video_dir=$(VC_EXP)/corpus/clips \
		--output=$(VC_EXP)/features --num_frames=8 --log_every=20
	$(VPY) -m data_prep.msvd --corpus_csv=$(VC_EXP)/corpus/video_corpus.csv \
		--mapping=$(VC_EXP)/corpus/youtube_mapping.txt --features=$(VC_EXP)/features \
		--output_dir=$(VC_EXP)/data --train_clips=160 --val_clips=20 --test_clips=20
	$(VPY) -m video_caption.run_captioning --mode=train $(VC_MODEL) --max_steps=800 \
		--valid_every=200 --checkpoint_steps=200
	$(VPY) -m video_caption.run_captioning --mode=decode $(VC_MODEL) --decode_split=test \
		--attention_images=5 --video_dir=$(VC_EXP)/corpus/clips
	@echo
	@echo "Clips, features, checkpoints, captions and TensorBoard logs: $(VC_EXP)/"
	@echo "View them with: $(VENV)/bin/tensorboard --logdir $(VC_EXP)/acvi"

# Every script in bench/ on this lane with its defaults; then the decoding speed on a
# trained checkpoint, the training steps and decoding in float32 against bfloat16 with
# the profile of the summarizer's step; on the current lane, then the tfa.seq2seq peer of
# bench/peers.py (bench-tfa).
bench: venv sysdeps
	@set -e; for script in bench/[!_]*.py; do echo "== $$script"; $(VPY) $$script; done
	$(VPY) bench/decode_speed.py --size=trained --decode_batch_size=400 --single_articles=100 \
		--compare_precision=bfloat16
	$(VPY) bench/decode_speed.py --size=paper --compare_precision=bfloat16
	$(VPY) bench/train_step.py --variants='acvi collapsed' --precisions=none,bfloat16 \
		--profile_steps=2
	$(VPY) bench/host_step.py --variants='acvi collapsed' --precisions=none,bfloat16
	@[ "$(LANE)" != current ] || $(MAKE) --no-print-directory bench-tfa

# bench/peers.py's tfa.seq2seq peer: tensorflow-addons installs on the tf215 lane only, so
# this builds that lane's environment (first run only) and times the peer there.
bench-tfa:
	@$(MAKE) --no-print-directory LANE=tf215 venv
	@echo "== bench/peers.py --peer=tfa (tf215 lane)"
	.venv-tf215/bin/python bench/peers.py --peer=tfa

# The GPU measurements: the timing scripts plain, with XLA, with mixed precision and with
# both, and the decoding rate (with coverage, as the paper's final models decode) over
# enough batches of 128 articles to extrapolate to the CNN/DailyMail test set. Needs a
# GPU that TensorFlow sees.
GPU_SETTINGS := "" "--jit_compile" "--mixed_precision=float16" "--mixed_precision=bfloat16" \
	"--jit_compile --mixed_precision=bfloat16"
bench-gpu: venv sysdeps
	@$(VPY) -c 'import acvi_tf.quiet, sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices("GPU") else "make bench-gpu: TensorFlow sees no GPU")'
	@set -e; for s in $(GPU_SETTINGS); do \
		echo "== settings: $${s:-plain}"; \
		$(VPY) bench/train_step.py $$s; \
		$(VPY) bench/host_step.py $$s; \
		$(VPY) bench/decode_speed.py --articles=512 --decode_batch_size=128 --single_articles=8 --coverage $$s; \
	done
	$(VPY) bench/encoder_lstm.py

clean:
	rm -rf .venv .venv-gpu .venv-tf215 .venv-lock-check build *.egg-info .pytest_cache
