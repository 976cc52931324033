"""Frame features of video clips: the extraction command.

Extraction follows the MSVD setting: the first ``--max_frames`` (240) frames of every
clip are decoded, ``--num_frames`` (K) equally spaced ones are kept (the
arctic-capgen-vid rule, ``frames.sample_indices``), and each goes through a CNN
(``cnn.CNNS``: BVLC GoogLeNet ``pool5/7x7_s1``, 1,024-d, or Inception v3, 2,048-d). A
clip is stored as float32 [n, dim] with n = min(K, frames decoded); shorter clips are
zero-padded and masked later by the data pipeline. The clip name is the file name
without its extension (``-4wsuPCjDBc_5_15.avi`` -> ``-4wsuPCjDBc_5_15``; the rule of
``acvi_tf.formats.video_folder``).

The output formats (``--format``) are ``video_caption.extraction``'s. The run resumes:
clips already in the output are skipped, so a killed run is restarted with the same
command. A run refuses to add to an output made with other settings. A clip that cannot
be decoded is logged with its file name and listed in the failed file; the run goes on.
Without ``--cnn_weights`` the CNN is randomly initialised (seeded, with a loud warning):
the features are then deterministic but not ImageNet features.

``acvi_tf.formats.frame_features.open_features`` reads such outputs and the other forms
MSVD features come in.

Usage::

  python -m video_caption.features --video_dir=YouTubeClips --output=features \\
      [--cnn=googlenet|inception_v3] [--cnn_weights=bvlc_googlenet.npy] \\
      [--max_frames=240] [--num_frames=24] [--format=npy|hdf5] [--batch_size=32] \\
      [--clips=youtube_mapping.txt] [--dtype=float32|float16] [--log_every=10]
"""

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.formats.video_folder import VIDEO_EXTENSIONS
from acvi_tf.process import stops
from acvi_tf.training import distribute
from video_caption import cnn as cnn_lib
from video_caption import extraction
from video_caption.extraction import DTYPES, FORMATS, Stats


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags on ``flag_values``."""
    fv = flag_values
    flags.DEFINE_string(
        "video_dir",
        None,
        "Folder of the videos (%s); the clip name is "
        "the file name without extension." % " ".join(VIDEO_EXTENSIONS),
        flag_values=fv,
    )
    flags.DEFINE_string(
        "output",
        None,
        "Output folder (--format=npy) or HDF5 file (--format=hdf5); an existing one is resumed.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "cnn",
        "googlenet",
        list(cnn_lib.CNNS),
        "Feature extractor: BVLC "
        "GoogLeNet pool5/7x7_s1 (1024-d, 224 px) or Inception v3 (2048-d, "
        "299 px).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "cnn_weights",
        None,
        "Weights of the CNN: for googlenet a "
        "caffe-tensorflow .npy dict or a Keras .h5 saved from "
        "video_caption.cnn.googlenet; for inception_v3 the Keras ImageNet "
        "'notop' .h5. Default: a seeded random initialisation (features "
        "NOT comparable with published ones).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_frames", 240, "Decode only the first frames of a video.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "num_frames",
        24,
        "K equally spaced frames kept per clip (arctic-capgen-vid: 28; the ACVI paper: 24).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "format",
        "npy",
        list(FORMATS),
        "npy: a folder of <clip>.npy; hdf5: one file, a dataset per clip.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "batch_size", 32, "Frames per CNN forward pass.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_string(
        "clips",
        None,
        "Optional file of clip names to extract (first "
        "field of each line; youtube_mapping.txt works).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "dtype",
        "float32",
        list(DTYPES),
        "Stored precision (float16 halves the disk space; readers return float32).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "log_every", 10, "A progress line every this many clips.", lower_bound=1, flag_values=fv
    )
    flags.mark_flags_as_required(["video_dir", "output"], flag_values=fv)


def run(config: config_lib.Config) -> Stats:
    """Runs the extraction and prints the summary.

    Returns:
      The extraction's ``Stats``.
    """
    clips = extraction.read_clip_list(config.clips) if config.clips else None
    distribute.log_devices()
    # each clip's reader starts a process: the stop comes after the clip it is on
    with stops.AtCheck("; rerun the same command to resume: the clips extracted are kept"):
        stats = extraction.extract_features(
            config.video_dir,
            config.output,
            cnn=config.cnn,
            cnn_weights=config.cnn_weights,
            max_frames=config.max_frames,
            num_frames=config.num_frames,
            fmt=config.format,
            batch_size=config.batch_size,
            clips=clips,
            log_every=config.log_every,
            dtype=config.dtype,
        )
    print("Features of %s -> %s\n%s" % (config.video_dir, config.output, stats.summary()))
    return stats


def exit_status(stats: Stats) -> int:
    """0 when every clip was extracted, 1 when some failed (listed in the failed file)."""
    return 1 if stats.failed else 0


if __name__ == "__main__":
    config_lib.run_command(define_flags, run, exit_status)
