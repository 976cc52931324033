# Two commands: `make demo` and `make test` (plus `make bench`). Each creates .venv on
# first use from the one pinned requirements.txt, checks the system pieces the metrics
# need (Java for the METEOR / CIDEr / PTBTokenizer jars, Perl's XML::Parser for
# ROUGE-1.5.5), and reuses everything on later runs.
SHELL := /bin/bash
.DEFAULT_GOAL := test

# The first interpreter TensorFlow 2.15 supports; override with `make PYTHON=...`.
PYTHON ?= $(shell for p in python3.11 python3.10 python3.9 python3; do \
	command -v $$p >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: test demo demo-captions bench bench-gpu venv sysdeps clean

venv: $(STAMP)

$(STAMP): requirements.txt setup.py
	@if [ -z "$(PYTHON)" ]; then echo "make: no python3 found; install Python 3.9, 3.10 or 3.11." >&2; exit 1; fi
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 9) <= v <= (3, 11) else \
		"make: %s is Python %d.%d; TensorFlow 2.15 needs Python 3.9, 3.10 or 3.11. Run make PYTHON=/path/to/python3.11" % (sys.executable, *v))'
	@if [ -x $(VPY) ] && ! $(VPY) -c 'import sys; sys.exit(not (3, 9) <= sys.version_info[:2] <= (3, 11))'; then \
		echo "make: $(VENV) was made with an unsupported Python; remove it (make clean) and run again." >&2; exit 1; fi
	@test -x $(VPY) || { echo "Creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "Installing the pinned requirements into $(VENV) (first run only; about 2 GB)"
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

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
# tracing, so two processes on two cores take about 40% less wall time than one.
TEST_WORKERS ?= 2
test: venv sysdeps
	$(VPY) -m pytest -n $(TEST_WORKERS) tests

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

demo: venv sysdeps
	$(VPY) -m pointer_generator.run_summarization --mode=train --optimizer=adam \
		--data_path='$(DEMO_DATA)/chunked/train_*' $(DEMO_MODEL)
	$(VPY) -m pointer_generator.run_summarization --mode=eval --eval_max_batches=20 \
		--data_path='$(DEMO_DATA)/chunked/val_*' $(DEMO_MODEL)
	$(VPY) -m pointer_generator.run_summarization --mode=decode --single_pass \
		--data_path='$(DEMO_DATA)/chunked/test_*' $(DEMO_MODEL) $(DEMO_DECODE)
	$(VPY) -m pointer_generator.lead_baseline --num_sentences=1 \
		--data_path='$(DEMO_DATA)/chunked/test_*' --vocab_path=$(DEMO_DATA)/vocab \
		--vocab_size=10000 --out_dir=demo_logs/$(DEMO_EXP)/lead1_test
	@echo
	@echo "Test split of $(DEMO_DATA) (400 Debian descriptions -> synopses):"
	@$(VPY) -m pointer_generator.results_table \
		ACVI=$$(ls -d demo_logs/$(DEMO_EXP)/decode_test_* | head -1) \
		lead-1=demo_logs/$(DEMO_EXP)/lead1_test
	@echo
	@echo "Checkpoints, decoded summaries and TensorBoard logs: demo_logs/$(DEMO_EXP)/"
	@echo "View them with: .venv/bin/tensorboard --logdir demo_logs/$(DEMO_EXP)"

# The captioner on generated clips, from video files to scores, by the documented MSVD
# path: 200 clips written as MSVD (videos, corpus CSV, youtube_mapping.txt), their frame
# features (GoogLeNet, randomly initialised: no weights can be downloaded here), the
# splits, training with ACVI and validation CIDEr, and beam-search captions of the test
# clips scored with BLEU-4, METEOR, ROUGE-L and CIDEr-D next to the constant caption.
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
		--attention_images=5
	@echo
	@echo "Clips, features, checkpoints, captions and TensorBoard logs: $(VC_EXP)/"
	@echo "View them with: .venv/bin/tensorboard --logdir $(VC_EXP)/acvi"

bench: venv sysdeps
	@set -e; for script in bench/[!_]*.py; do echo "== $$script"; $(VPY) $$script; done

# The GPU measurements: the timing scripts plain, with XLA, with mixed precision and with
# both, and the decoding rate (with coverage, as the paper's final models decode) over
# enough batches of 128 articles to extrapolate to the CNN/DailyMail test set. Needs a
# GPU that TensorFlow sees.
GPU_SETTINGS := "" "--jit_compile" "--mixed_precision" "--jit_compile --mixed_precision"
bench-gpu: venv sysdeps
	@$(VPY) -c 'import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices("GPU") else "make bench-gpu: TensorFlow sees no GPU")'
	@set -e; for s in $(GPU_SETTINGS); do \
		echo "== settings: $${s:-plain}"; \
		$(VPY) bench/train_step.py $$s; \
		$(VPY) bench/host_step.py $$s; \
		$(VPY) bench/decode_speed.py --articles=512 --decode_batch_size=128 --single_articles=8 --coverage $$s; \
	done
	$(VPY) bench/encoder_lstm.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
