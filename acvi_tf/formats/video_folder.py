"""A folder of videos, one clip per file: the clip name is the file name without its
extension.

``video_caption.features`` extracts the features of such a folder and
``data_prep.captions --videos`` matches the clip ids of the captions to its files by the
same rule: a file ``<clip><extension>`` directly in the folder (not in subfolders), the
extension one of ``VIDEO_EXTENSIONS`` in any case (``-4wsuPCjDBc_5_15.avi`` is the clip
``-4wsuPCjDBc_5_15``); hidden files are ignored, and of two files of one clip the first in
sorted order is taken (with a warning)::

  videos = find_videos("YouTubeClips")   # {clip: path}, sorted by clip
"""

import os

from absl import logging

from acvi_tf.formats.frame_features import FeaturesError

# The file extensions taken for videos (lower case, with the dot).
VIDEO_EXTENSIONS = (".avi", ".mp4", ".mkv", ".webm", ".mov", ".mpg")


def find_videos(video_dir, clips=None):
    """The video files of a folder, by clip name (the file name without its extension).

    Args:
      video_dir: the folder (not searched recursively).
      clips: optional clip names to keep; names without a video are logged.

    Returns:
      A dict clip -> path, sorted by clip name.

    Raises:
      FeaturesError: the folder does not exist or holds no (selected) video.
    """
    if not os.path.isdir(video_dir):
        raise FeaturesError("the video folder %s is not a folder" % video_dir)
    videos = {}
    for entry in sorted(os.listdir(video_dir)):
        stem, extension = os.path.splitext(entry)
        if extension.lower() not in VIDEO_EXTENSIONS or entry.startswith("."):
            continue
        if stem in videos:
            logging.warning(
                "%s: clip %s also has the video %s; using the first",
                os.path.join(video_dir, entry),
                stem,
                videos[stem],
            )
            continue
        videos[stem] = os.path.join(video_dir, entry)
    if clips is not None:
        wanted = set(clips)
        missing = [name for name in clips if name not in videos]
        if missing:
            logging.warning(
                "%d listed clips have no video in %s, e.g. %s",
                len(missing),
                video_dir,
                ", ".join(missing[:5]),
            )
        videos = {name: path for name, path in videos.items() if name in wanted}
    if not videos:
        raise FeaturesError(
            "no %svideo files (%s) in %s"
            % ("listed " if clips is not None else "", " ".join(VIDEO_EXTENSIONS), video_dir)
        )
    return dict(sorted(videos.items()))
