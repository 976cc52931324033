"""Generates the captioning demo corpus: clips of one moving coloured shape, in MSVD form.

Real video with real captions cannot be reached from where the project is built, so the
captioning demo runs on generated clips. They are written exactly as MSVD is distributed
(video files, the MSR Video Description Corpus CSV and ``youtube_mapping.txt``), so that
they take the same path as the real corpus: ``video_caption.features`` (frame sampling,
CNN features) and then ``data_prep.msvd``.

Rules:

1. Clip ``i`` (1-based) is named in the MSVD form ``<VideoID>_<Start>_<End>`` with
   VideoID ``shapes0001`` ... (four digits or more), Start ``0`` and End the duration in
   whole seconds (``frames / 24`` rounded, at least 1): ``shapes0007_0_2``. The mapping
   gives it ``vid<i>``, so generation order is vidN order.
2. Content: each clip shows one shape (``SHAPES``: square, circle, triangle) in one
   saturated colour (``COLOURS``: red, green, blue, yellow) performing one motion
   (``MOTIONS``: grows, shrinks, moves left, moves right) over a low-contrast textured
   background (a tinted grey with stripes of random orientation and period plus smooth
   noise, different in every clip). The 48 combinations are dealt in shuffled rounds, so
   every combination occurs equally often (up to one round). The shape is large: its
   bounding box is 20-26% of the frame side at the small end of grows/shrinks and
   50-56% at the large end, and 34-40% when it moves, by 32-44% of the frame side.
   Why these motions: the features are globally average-pooled CNN maps, which keep
   what is in a frame but not where. Size over time survives pooling; a plain
   translation would not, so a moving shape leaves a motion-blur trail (three fading
   copies behind it), an oriented pattern that pooling keeps and whose side tells the
   direction in every frame.
3. Video: ``clips/<name>.mp4``, H.264 (libx264, yuv420p, CRF 17) at 24 fps, written with
   ``imageio_ffmpeg.write_frames``; when the bundled ffmpeg has no libx264, Motion JPEG in
   ``clips/<name>.avi``. Files of the ``shapes*`` form left in ``clips/`` by an earlier,
   larger run are removed.
4. Captions: ``--captions_per_clip`` English descriptions per clip from ``TEMPLATES``
   (distinct templates while there are enough), with the words drawn from synonym lists
   (``SHAPE_WORDS``, ``MOTION_VERBS``, ``MOTION_GERUNDS``, ``SIZE_WORDS``,
   ``BACKGROUND_PHRASES``); half start with a capital letter and a quarter end with a
   period, as in the real corpus. Each clip also gets one German description and one
   English row with an empty Description, which ``data_prep.msvd`` must filter out;
   the rows of a clip are in random order.
5. CSV: the 8 columns of the MSR Video Description Corpus: ``VideoID, Start, End,
   WorkerID`` (a 5-6 digit number), ``Source`` (``clean``), ``AnnotationTime`` (seconds,
   8-60), ``Language``, ``Description``.
6. Determinism: everything is drawn from NumPy Generators seeded by ``--seed`` (the deal
   of combinations) and by ``[seed, i]`` (clip ``i``), so a seed gives the same corpus,
   and clip ``i`` does not depend on ``--num_clips``.

Output, each file written atomically into ``--output_dir``: ``clips/<name>.mp4``,
``video_corpus.csv``, ``youtube_mapping.txt`` and ``attributes.json`` (clip -> ``colour``,
``shape``, ``motion``, ``vid``, ``video``), for the tests.

Usage::

  python -m data_prep.moving_shapes --output_dir=moving_shapes \\
      [--num_clips=200] [--frames=48] [--size=112] [--captions_per_clip=6] [--seed=0]
"""

import concurrent.futures
import csv
import dataclasses
import functools
import io
import itertools
import json
import os
import re
import subprocess
import tempfile
from typing import Dict, List, Tuple

import imageio_ffmpeg
import numpy as np
from absl import flags, logging
from PIL import Image

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf import progress as progress_lib

FPS = 24
VIDEO_PREFIX = "shapes"
CSV_FILE = "video_corpus.csv"
MAPPING_FILE = "youtube_mapping.txt"
ATTRIBUTES_FILE = "attributes.json"
CLIPS_DIR = "clips"
CSV_COLUMNS = (
    "VideoID",
    "Start",
    "End",
    "WorkerID",
    "Source",
    "AnnotationTime",
    "Language",
    "Description",
)

COLOURS = {
    "red": (225, 35, 35),
    "green": (35, 195, 55),
    "blue": (40, 75, 235),
    "yellow": (240, 215, 30),
}
SHAPES = ("square", "circle", "triangle")
MOTIONS = ("grows", "shrinks", "moves left", "moves right")

SHAPE_WORDS = {
    "square": ("square", "box"),
    "circle": ("circle", "ball", "disk"),
    "triangle": ("triangle",),
}
MOTION_VERBS = {
    "grows": (
        "grows",
        "gets bigger",
        "grows larger",
        "becomes bigger",
        "expands",
        "increases in size",
    ),
    "shrinks": (
        "shrinks",
        "gets smaller",
        "becomes smaller",
        "shrinks down",
        "contracts",
        "decreases in size",
    ),
    "moves left": (
        "moves to the left",
        "moves left",
        "slides to the left",
        "slides left",
        "goes left",
        "travels to the left",
    ),
    "moves right": (
        "moves to the right",
        "moves right",
        "slides to the right",
        "slides right",
        "goes right",
        "travels to the right",
    ),
}
MOTION_GERUNDS = {
    "grows": ("growing", "getting bigger", "expanding", "becoming larger"),
    "shrinks": ("shrinking", "getting smaller", "contracting", "becoming smaller"),
    "moves left": ("moving to the left", "moving left", "sliding to the left", "sliding left"),
    "moves right": ("moving to the right", "moving right", "sliding to the right", "sliding right"),
}
SIZE_WORDS = {
    "grows": ("small", "little"),
    "shrinks": ("big", "large"),
    "moves left": ("big", "large"),
    "moves right": ("big", "large"),
}
BACKGROUND_PHRASES = (
    "on a striped background",
    "on a textured background",
    "in front of a gray background",
)
# {colour} {shape} {verb} {gerund} {size} {background}
TEMPLATES = (
    "a {colour} {shape} {verb}",
    "the {colour} {shape} {verb}",
    "a {colour} {shape} is {gerund}",
    "a {size} {colour} {shape} {verb}",
    "there is a {colour} {shape} {gerund}",
    "the {shape} on the screen is {colour} and {verb}",
    "a {colour} colored {shape} {verb}",
    "a {colour} {shape} {verb} {background}",
    "we see a {colour} {shape} {gerund}",
    "a {shape} that is {colour} {verb}",
)
GERMAN_COLOURS = {"red": "rot", "green": "grün", "blue": "blau", "yellow": "gelb"}
GERMAN_SHAPES = {
    "square": ("Quadrat", "es"),
    "circle": ("Kreis", "er"),
    "triangle": ("Dreieck", "es"),
}
GERMAN_MOTIONS = {
    "grows": "wird größer",
    "shrinks": "wird kleiner",
    "moves left": "bewegt sich nach links",
    "moves right": "bewegt sich nach rechts",
}

WORKERS = 4  # threads rendering and encoding clips
TRAIL = (0.45, 0.3, 0.15)  # opacities of the motion-blur copies, nearest first
_STALE_CLIP = re.compile(r"^%s\d+_\d+_\d+\.(?:mp4|avi)$" % VIDEO_PREFIX)


class MovingShapesError(errors.UserError, ValueError):
    """A setting the generator cannot honour, or no usable ffmpeg; the message says why."""


@dataclasses.dataclass(frozen=True)
class ClipSpec:
    """What one clip shows.

    Attributes:
      colour: a key of ``COLOURS``.
      shape: one of ``SHAPES``.
      motion: one of ``MOTIONS``.
    """

    colour: str
    shape: str
    motion: str


def clip_name(index: int, frames: int, num_clips: int = 0) -> str:
    """The MSVD-form name of clip ``index`` (1-based): ``shapes0007_0_2``.

    Args:
      index: the clip number, also N of its vidN.
      frames: frames per clip (the End field is the duration in whole seconds, >= 1).
      num_clips: the number of clips, to widen the number beyond four digits if needed.

    Returns:
      ``<VideoID>_<Start>_<End>``.
    """
    width = max(4, len(str(num_clips)))
    end = max(1, int(round(frames / FPS)))
    return "%s%0*d_0_%d" % (VIDEO_PREFIX, width, index, end)


def deal_specs(num_clips: int, seed: int) -> List[ClipSpec]:
    """The ``ClipSpec`` of every clip: the 48 combinations dealt in shuffled rounds.

    Args:
      num_clips: how many clips.
      seed: the generator seed.

    Returns:
      A list of ``num_clips`` specs.
    """
    combinations = list(itertools.product(COLOURS, SHAPES, MOTIONS))
    rng = np.random.default_rng(seed)
    specs = []
    while len(specs) < num_clips:
        specs.extend(ClipSpec(*combinations[i]) for i in rng.permutation(len(combinations)))
    return specs[:num_clips]


def _background(rng, size):
    """A low-contrast textured background: tinted grey, stripes and smooth noise, [0, 1]."""
    grey = rng.uniform(0.3, 0.55)
    tint = rng.uniform(-0.04, 0.04, size=3)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    angle = rng.uniform(0, np.pi)
    period = rng.uniform(size / 10, size / 4)
    stripes = rng.uniform(0.03, 0.08) * np.sin(
        2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period + rng.uniform(0, 6.3)
    )
    coarse = rng.normal(0, 0.05, size=(max(2, size // 8), max(2, size // 8)))
    smooth = np.asarray(
        Image.fromarray(coarse.astype(np.float32)).resize((size, size), Image.Resampling.BILINEAR)
    )
    fine = rng.normal(0, 0.015, size=(size, size))
    luminance = (grey + stripes + smooth + fine)[..., None]
    return np.clip(luminance + tint, 0, 1).astype(np.float32)


def _coverage(shape, x, y, cx, cy, r):
    """Anti-aliased coverage in [0, 1] of a shape with bounding box half-side ``r``.

    The signed distance (pixels, positive inside) plus a half pixel, clipped.
    """
    if shape == "circle":
        inside = r - np.hypot(x - cx, y - cy)
    elif shape == "square":
        inside = r - np.maximum(np.abs(x - cx), np.abs(y - cy))
    elif shape == "triangle":
        # apex (cx, cy - r), base from (cx - r, cy + r) to (cx + r, cy + r)
        norm = np.sqrt(5.0)
        left = (2 * (x - cx) + (y - cy) + r) / norm  # >= 0 right of the left edge
        right = (-2 * (x - cx) + (y - cy) + r) / norm
        inside = np.minimum(np.minimum(left, right), r - (y - cy))
    else:
        raise ValueError("unknown shape %r; expected one of %s" % (shape, ", ".join(SHAPES)))
    return np.clip(inside + 0.5, 0, 1)


def _trajectory(motion, rng, frames):
    """Per-frame (centre x, centre y, half side), as fractions of the frame side."""
    t = np.linspace(0, 1, frames)
    cy = np.full(frames, 0.5 + rng.uniform(-0.05, 0.05))
    if motion in ("grows", "shrinks"):
        cx = np.full(frames, 0.5 + rng.uniform(-0.05, 0.05))
        small, large = rng.uniform(0.10, 0.13), rng.uniform(0.25, 0.28)
        if motion == "shrinks":
            small, large = large, small
        half = small + (large - small) * t
    elif motion in ("moves left", "moves right"):
        half = np.full(frames, rng.uniform(0.17, 0.2))
        start, end = rng.uniform(0.66, 0.72), rng.uniform(0.28, 0.34)
        if motion == "moves right":
            start, end = end, start
        cx = start + (end - start) * t
    else:
        raise ValueError("unknown motion %r; expected one of %s" % (motion, ", ".join(MOTIONS)))
    return cx, cy, half


def render_frames(spec: ClipSpec, frames: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Renders one clip.

    Args:
      spec: the ``ClipSpec``.
      frames: the number of frames (>= 2).
      size: the frame side in pixels.
      rng: a NumPy Generator (background, colour shade, placement).

    Returns:
      uint8 array [frames, size, size, 3] (RGB).
    """
    background = _background(rng, size)
    colour = np.asarray(COLOURS[spec.colour], np.float32) / 255 * rng.uniform(0.9, 1.0)
    cx, cy, half = _trajectory(spec.motion, rng, frames)
    step = 0.04 * size * (1 if spec.motion == "moves left" else -1)  # the trail's side
    trail = TRAIL if spec.motion.startswith("moves") else ()
    # farthest trail copy first, the shape itself last
    layers = [(opacity, (k + 1) * step) for k, opacity in enumerate(trail)][::-1]
    layers.append((1.0, 0.0))
    video = np.empty((frames, size, size, 3), np.uint8)
    for f in range(frames):
        frame = background.copy()
        for opacity, offset in layers:
            x0, y0, r = cx[f] * size + offset, cy[f] * size, half[f] * size
            # only the pixels of the shape's bounding box (plus one) can change
            left, top = max(0, int(x0 - r) - 1), max(0, int(y0 - r) - 1)
            right, bottom = min(size, int(x0 + r) + 2), min(size, int(y0 + r) + 2)
            if left >= right or top >= bottom:
                continue
            y, x = np.mgrid[top:bottom, left:right].astype(np.float32) + 0.5
            alpha = opacity * _coverage(spec.shape, x, y, x0, y0, r)[..., None]
            box = frame[top:bottom, left:right]
            box += alpha * (colour - box)
        video[f] = np.clip(np.rint(frame * 255), 0, 255).astype(np.uint8)
    return video


def _capitalised(text):
    return text[:1].upper() + text[1:]


def english_captions(spec: ClipSpec, count: int, rng: np.random.Generator) -> List[str]:
    """``count`` English descriptions of a clip, from ``TEMPLATES`` and synonym lists.

    Args:
      spec: the ``ClipSpec``.
      count: how many descriptions.
      rng: a NumPy Generator.

    Returns:
      A list of ``count`` strings (distinct templates while there are enough).
    """
    order = []
    while len(order) < count:
        order.extend(rng.permutation(len(TEMPLATES)).tolist())
    captions = []
    for template_index in order[:count]:
        words = {
            "colour": spec.colour,
            "shape": rng.choice(SHAPE_WORDS[spec.shape]),
            "verb": rng.choice(MOTION_VERBS[spec.motion]),
            "gerund": rng.choice(MOTION_GERUNDS[spec.motion]),
            "size": rng.choice(SIZE_WORDS[spec.motion]),
            "background": rng.choice(BACKGROUND_PHRASES),
        }
        text = TEMPLATES[template_index].format(**words)
        if rng.random() < 0.5:
            text = _capitalised(text)
        if rng.random() < 0.25:
            text += "."
        captions.append(text)
    return captions


def german_caption(spec: ClipSpec) -> str:
    """The German description of a clip: ``Ein rotes Quadrat wird größer``."""
    noun, ending = GERMAN_SHAPES[spec.shape]
    return "Ein %s%s %s %s" % (
        GERMAN_COLOURS[spec.colour],
        ending,
        noun,
        GERMAN_MOTIONS[spec.motion],
    )


def csv_rows(
    name: str, spec: ClipSpec, captions_per_clip: int, rng: np.random.Generator
) -> List[List[str]]:
    """The CSV rows of one clip: English captions, one German, one empty English row.

    Args:
      name: the clip name ``<VideoID>_<Start>_<End>``.
      spec: the ``ClipSpec``.
      captions_per_clip: the number of English descriptions.
      rng: a NumPy Generator.

    Returns:
      A list of 8-field rows in the order of ``CSV_COLUMNS``, shuffled.
    """
    video_id, start, end = name.rsplit("_", 2)
    texts = [("English", text) for text in english_captions(spec, captions_per_clip, rng)]
    texts += [("German", german_caption(spec)), ("English", "")]
    rows = []
    for i in rng.permutation(len(texts)):
        language, text = texts[i]
        rows.append(
            [
                video_id,
                start,
                end,
                str(int(rng.integers(10000, 1000000))),
                "clean",
                str(int(rng.integers(8, 61))),
                language,
                text,
            ]
        )
    return rows


@functools.lru_cache(maxsize=None)
def video_format() -> Tuple[str, str, str, Tuple[str, ...]]:
    """``(codec, pix_fmt, extension, output_params)``: libx264 if ffmpeg has it, else mjpeg."""
    try:
        encoders = subprocess.run(
            [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-encoders"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise MovingShapesError(
            "cannot run the ffmpeg of imageio_ffmpeg (%s); reinstall imageio-ffmpeg" % e
        ) from e
    if re.search(r"^\s*V\S*\s+libx264\s", encoders, re.MULTILINE):
        return "libx264", "yuv420p", ".mp4", ("-crf", "17", "-preset", "medium")
    logging.warning("ffmpeg has no libx264; writing Motion JPEG .avi clips")
    return "mjpeg", "yuvj420p", ".avi", ("-q:v", "3")


def write_video(path: str, video: np.ndarray) -> None:
    """Writes ``video`` (uint8 [frames, h, w, 3]) to ``path`` atomically at 24 fps.

    The codec is ``video_format()``'s; ``path`` should carry its extension.
    """
    codec, pix_fmt, _, params = video_format()
    height, width = video.shape[1:3]
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, partial = tempfile.mkstemp(
        dir=directory, prefix=".partial-", suffix=os.path.splitext(path)[1]
    )
    os.close(handle)
    try:
        writer = imageio_ffmpeg.write_frames(
            partial,
            (width, height),
            fps=FPS,
            codec=codec,
            pix_fmt_out=pix_fmt,
            quality=None,
            macro_block_size=2,
            ffmpeg_log_level="error",
            output_params=list(params),
        )
        writer.send(None)
        for frame in video:
            writer.send(np.ascontiguousarray(frame))
        writer.close()
        os.chmod(partial, 0o666 & ~_umask())
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_stale_clips(clips_dir, keep):
    for entry in os.listdir(clips_dir):
        if _STALE_CLIP.match(entry) and entry not in keep:
            os.unlink(os.path.join(clips_dir, entry))


def generate(
    output_dir: str,
    num_clips: int = 200,
    frames: int = 48,
    size: int = 112,
    captions_per_clip: int = 6,
    seed: int = 0,
) -> Dict[str, dict]:
    """Generates the corpus into ``output_dir``.

    Args:
      output_dir: the output folder (created if needed).
      num_clips: how many clips (vid1 .. vid``num_clips``).
      frames: frames per clip (>= 2).
      size: the frame side in pixels (even, >= 16).
      captions_per_clip: English descriptions per clip (>= 1).
      seed: the generator seed.

    Returns:
      A dict clip name -> attributes (``colour``, ``shape``, ``motion``, ``vid``,
      ``video``: the path relative to ``output_dir``), in vidN order.

    Raises:
      ValueError: an argument is out of range.
    """
    if num_clips < 1:
        raise MovingShapesError("num_clips must be >= 1, got %d" % num_clips)
    if frames < 2:
        raise MovingShapesError("frames must be >= 2, got %d" % frames)
    if size < 16 or size % 2:
        raise MovingShapesError("size must be even (yuv420p) and >= 16, got %d" % size)
    if captions_per_clip < 1:
        raise MovingShapesError("captions_per_clip must be >= 1, got %d" % captions_per_clip)
    extension = video_format()[2]
    clips_dir = os.path.join(output_dir, CLIPS_DIR)
    os.makedirs(clips_dir, exist_ok=True)

    def make_clip(index, spec):
        rng = np.random.default_rng([seed, index])
        name = clip_name(index, frames, num_clips)
        relative = "%s/%s%s" % (CLIPS_DIR, name, extension)
        write_video(os.path.join(output_dir, relative), render_frames(spec, frames, size, rng))
        return name, relative, csv_rows(name, spec, captions_per_clip, rng)

    attributes = {}
    rows = []
    specs = deal_specs(num_clips, seed)
    # ffmpeg encodes in its own process (and NumPy releases the GIL), so a few threads
    # overlap rendering and encoding; the results come back in clip order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = pool.map(make_clip, range(1, num_clips + 1), specs)
        progress = progress_lib.Progress(num_clips, "wrote clips")
        for index, (spec, (name, relative, clip_rows)) in enumerate(zip(specs, results), start=1):
            progress(index)
            rows.extend(clip_rows)
            attributes[name] = {
                "colour": spec.colour,
                "shape": spec.shape,
                "motion": spec.motion,
                "vid": "vid%d" % index,
                "video": relative,
            }
    _remove_stale_clips(clips_dir, {os.path.basename(a["video"]) for a in attributes.values()})
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(rows)
    files.atomic_write_text(os.path.join(output_dir, CSV_FILE), text.getvalue())
    files.atomic_write_text(
        os.path.join(output_dir, MAPPING_FILE),
        "".join("%s %s\n" % (name, a["vid"]) for name, a in attributes.items()),
    )
    files.atomic_write_text(
        os.path.join(output_dir, ATTRIBUTES_FILE), json.dumps(attributes, indent=1) + "\n"
    )
    return attributes


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "output_dir",
        None,
        "Directory for clips/, video_corpus.csv, youtube_mapping.txt and attributes.json.",
        flag_values=fv,
    )
    flags.DEFINE_integer("num_clips", 200, "Number of clips.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer("frames", 48, "Frames per clip (24 fps).", lower_bound=2, flag_values=fv)
    flags.DEFINE_integer(
        "size", 112, "Frame side in pixels (even).", lower_bound=16, flag_values=fv
    )
    flags.DEFINE_integer(
        "captions_per_clip", 6, "English descriptions per clip.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer("seed", 0, "Seed of the NumPy generators.", flag_values=fv)
    flags.mark_flag_as_required("output_dir", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Generates the corpus from the flags and prints what to run next."""
    attributes = generate(
        config.output_dir,
        config.num_clips,
        config.frames,
        config.size,
        config.captions_per_clip,
        config.seed,
    )
    val = test = max(1, config.num_clips // 10) if config.num_clips >= 3 else 0
    train = config.num_clips - val - test
    print(
        "Wrote %d clips (%d frames of %dx%d at %d fps, %d English captions each) to %s\n"
        "Next: extract their features with video_caption.features, then\n"
        "  python -m data_prep.msvd --corpus_csv=%s --mapping=%s --output_dir=... "
        "--train_clips=%d --val_clips=%d --test_clips=%d [--features=...]"
        % (
            len(attributes),
            config.frames,
            config.size,
            config.size,
            FPS,
            config.captions_per_clip,
            config.output_dir,
            os.path.join(config.output_dir, CSV_FILE),
            os.path.join(config.output_dir, MAPPING_FILE),
            train,
            val,
            test,
        )
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
