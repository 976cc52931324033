"""The video captioner as a library: its run's folders, vocabulary, model, checkpoint
checks, decoder and data splits, built from a ``Config`` (``run_captioning``'s flags, or a
run's record of them).

The captioner's Task (``video_caption.task``) and its jobs build the run from these; the
Runner restores it (``acvi_tf.runner.restoring``) in the folders the Task names.
"""

import glob
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from absl import logging

from acvi_tf import builders
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import frame_features, vocabulary
from acvi_tf.metrics import captions as caption_metrics
from acvi_tf.runner import inference
from acvi_tf.runner.task import Task
from acvi_tf.training import losses
from video_caption import data
from video_caption import decode as decode_lib
from video_caption import model as model_lib

# The caption metrics, in the order every report gives them.
REPORTED = ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr")
# The search settings eval and decode log.
SEARCH_FLAGS = ("beam_size", "max_decode_len", "length_normalization", "decode_batch_size")


def train_dir(config: Config) -> str:
    """The folder of the run's training checkpoints."""
    return os.path.join(config.out_dir, "train")


def build_model(config: Config, vocab: data.Vocab, feature_dim: int) -> keras.Model:
    """The model the flags describe, with every variable built, for frame features of
    ``feature_dim`` values."""
    model = model_lib.Captioner(
        vocab.size(),
        config.encoder_units,
        config.decoder_units,
        config.emb_dim,
        config.attention_units,
        config.output_units or None,
        config.dropout,
        builders.context_layer(config),
        jit_compile=config.jit_compile,
        alpha_c=config.alpha_c,
        weight_decay=config.weight_decay,
        kl_terms=builders.kl_schedule(config),
    )
    model(data.make_batch([np.zeros([1, feature_dim], np.float32)], [1], [[data.UNK_ID]]))
    return model


def vocabularies(config: Config, vocab: data.Vocab) -> Dict[str, Any]:
    """The run's caption vocabulary for its record (``acvi_flags.check_vocabularies``)."""
    return {"vocab.txt": (vocabulary_source(config), vocabulary.fingerprint(vocab.words()))}


def vocabulary_source(config: Config) -> str:
    """Where a refusal says the vocabulary came from (its flags)."""
    path = os.path.join(config.data_dir, "vocab.txt")
    given = "--data_dir=%s --vocab_size=%d" % (config.data_dir, config.vocab_size)
    return acvi_flags.vocabulary_source(config, ["data_dir", "vocab_size"], given, path)


def build_decoder(
    config: Config, model: keras.Model, vocab: data.Vocab
) -> decode_lib.CaptionDecoder:
    """The beam search of the run's decode flags over ``model``."""
    return decode_lib.CaptionDecoder(
        model,
        vocab,
        config.beam_size,
        config.max_decode_len,
        config.length_normalization,
        config.jit_compile,
    )


def load_vocab(config: Config) -> data.Vocab:
    """The run's caption vocabulary (``--data_dir``'s ``vocab.txt``, ``--vocab_size``)."""
    path = os.path.join(config.data_dir, "vocab.txt")
    what = "the vocabulary of the corpus the run trained on"
    acvi_flags.check_recorded_file(config, "data_dir", path, what, config.out_dir, data.DataError)
    return data.Vocab(path, config.vocab_size)


def files_read(config: Config) -> List[str]:
    """What a command that uses the run reads, beside the run's own files, which its
    outputs must not replace: every file of the corpus (``--data_dir``: its splits,
    vocabulary and statistics), the feature store (a folder: any path in it) and the
    training files the run's record names."""
    corpus = glob.glob(os.path.join(glob.escape(config.data_dir), "*"))
    return [
        *sorted(path for path in corpus if os.path.isfile(path)),
        config.features,
        *acvi_flags.trained_on(config.out_dir),
    ]


def split_path(config: Config, name: str) -> str:
    """The records of the split ``name`` (``--data_dir``'s ``<name>.jsonl``)."""
    return os.path.join(config.data_dir, name + ".jsonl")


def training_statistics(config: Config, store: Mapping) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """The training frames' per-dimension ``(mean [D], std [D])`` that standardise every
    split (``--feature_norm=standardize``; None otherwise).

    Args:
      config: the run's flags.
      store: the frame features of ``--features``.
    """
    if config.feature_norm != "standardize":
        return None
    records = data.read_split(split_path(config, "train"))
    return data.ClipSet(
        records, store, config.num_frames, source=config.features
    ).feature_statistics()


def clip_set(
    config: Config,
    records: List[dict],
    store: Mapping,
    source: str,
    statistics: Optional[Tuple[np.ndarray, np.ndarray]],
) -> data.ClipSet:
    """A ``data.ClipSet`` of clips other than the training split's.

    Args:
      config: the run's flags (``--num_frames``).
      records: the clips' records (``data.read_split``'s).
      store: their frame features.
      source: the store's name, for error messages.
      statistics: ``training_statistics`` to standardise the frames with (None: as
        they are).
    """
    clips = data.ClipSet(records, store, config.num_frames, source=source)
    if statistics is not None:
        clips.standardize(*statistics)
    return clips


def log_search(config: Config) -> None:
    """Logs the search settings the run captions with."""
    logging.info("Captioning with %s", acvi_flags.describe(config, SEARCH_FLAGS))


def load_decoder(task: Task, config: Config) -> decode_lib.CaptionDecoder:
    """The run's model with its best weights (or ``--ckpt``'s), restored by the Runner
    (``acvi_tf.runner.inference``), as a beam search (which holds the run's vocabulary):
    what the inference commands caption with.

    Args:
      task: the captioner's Task, which names the run's folders.
      config: the run's settings.

    Raises:
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
    """
    vocab = load_vocab(config)

    def build():
        with frame_features.open_features(config.features) as store:
            return build_model(config, vocab, store.dim)

    def decoder(model, path, step):
        del path, step
        log_search(config)
        return build_decoder(config, model, vocab)

    return inference.drive(task, config, inference.InferenceRun(vocab, build, decoder))


def load_statistics(config: Config) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """The run's training frames' statistics (``training_statistics``), with which the
    inference commands standardise new frames."""
    with frame_features.open_features(config.features) as store:
        return training_statistics(config, store)


class Experiment:
    """The data, model and decoder of one run, built from its ``Config``: what training,
    evaluation and the decode of a split share.

    Args:
      task: the captioner's Task, which names the run's folders.
      config: ``run_captioning``'s flags, or a run's record of them.
    """

    def __init__(self, task: Task, config: Config) -> None:
        self.task = task
        self.config = config
        self.vocab = load_vocab(config)
        self.store = frame_features.open_features(config.features)
        self._sets = {}
        self._statistics = None
        self.model = build_model(config, self.vocab, self.store.dim)
        self.decoder = build_decoder(config, self.model, self.vocab)

    def split(self, name: str) -> data.ClipSet:
        """The ``data.ClipSet`` of a split (loaded once, standardized if asked)."""
        if name not in self._sets:
            records = data.read_split(split_path(self.config, name))
            if name == "train":
                clips = data.ClipSet(
                    records, self.store, self.config.num_frames, source=self.config.features
                )
                if self.config.feature_norm == "standardize":
                    self._statistics = clips.feature_statistics()
                    clips.standardize(*self._statistics)
            else:
                clips = clip_set(  # standardised with the training frames' statistics
                    self.config, records, self.store, self.config.features, self.statistics
                )
            self._sets[name] = clips
        return self._sets[name]

    @property
    def statistics(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The training frames' per-dimension ``(mean [D], std [D])`` that standardise
        every split (``--feature_norm=standardize``; None otherwise)."""
        if self.config.feature_norm != "standardize":
            return None
        self.split("train")
        return self._statistics

    def perplexity(self, name: str) -> float:
        """Per-token perplexity of a split's captions (teacher forcing, no dropout)."""
        clips = self.split(name)
        total_nll, total_tokens = 0.0, 0.0
        for batch in clips.caption_batches(
            clips.caption_pairs(self.vocab), self.config.decode_batch_size
        ):
            out = self.model(batch)
            nll, count = losses.sequence_loss(
                out["logits"],
                batch["caption_out"],
                batch["caption_len"],
                token_nll=out["token_nll"],
            )
            total_nll += float(nll) * int(batch["caption_len"].shape[0])
            total_tokens += float(count)
        return losses.perplexity(total_nll, total_tokens)

    def score(self, name: str) -> Tuple[Dict[str, float], Dict[str, str], Dict[str, np.ndarray]]:
        """``(metrics, captions, attentions)`` of beam-search captions of a split."""
        clips = self.split(name)
        captions, attentions = self.decoder.caption_set(clips, self.config.decode_batch_size)
        metrics = caption_metrics.caption_metrics(
            clips.references(), captions, names=self.metric_names()
        )
        return metrics, captions, attentions

    def metric_names(self) -> List[str]:
        """``--metrics`` in the order of ``REPORTED``."""
        return [name for name in REPORTED if name in self.config.metrics]
