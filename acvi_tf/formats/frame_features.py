"""Stores of per-frame video features: a Mapping clip -> float32 [frames, dim].

``open_features`` reads what ``video_caption.features`` writes and the other forms MSVD
features come in: a folder of ``<clip>.npy`` / ``<clip>.npz`` files, an HDF5 file with one
dataset per clip, and the arctic-capgen-vid pickle ``FEAT_key_vidID_value_features.pkl``
(vidN -> [n, 1024])::

  store = open_features("features")      # Mapping clip -> float32 [n, dim]; store.dim
"""

import abc
import collections.abc
import os
import pickle
from typing import Union

import h5py
import numpy as np

from acvi_tf import errors


class FeaturesError(errors.UserError, ValueError):
    """Features cannot be written or read; the message names the path and the fix."""


class FeatureStore(collections.abc.Mapping):
    """A read-only Mapping clip -> float32 [n, dim], loaded clip by clip.

    Attributes:
      path: the store's path.
    """

    def __init__(self, path, names):
        self.path = path
        self._names = list(names)
        self._set = set(self._names)
        if not self._names:
            raise FeaturesError(
                "%s holds no features; it must be a folder of <clip>.npy "
                "or <clip>.npz files, an HDF5 file with a dataset per "
                "clip, or an arctic-capgen-vid features pickle" % path
            )
        self._dim = None

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, clip):
        return clip in self._set

    def __getitem__(self, clip):
        if clip not in self._set:
            raise KeyError(clip)
        array, where = self._load(clip)
        array = np.asarray(array)
        if array.ndim != 2:
            raise FeaturesError(
                "clip %s in %s: features must be 2-D [frames, dim], got "
                "shape %s" % (clip, where, array.shape)
            )
        return array.astype(np.float32, copy=False)

    @abc.abstractmethod
    def _load(self, clip):
        """(array, the file it came from) of one clip."""

    @property
    def dim(self) -> int:
        """The feature size, read from the first clip."""
        if self._dim is None:
            self._dim = int(self[self._names[0]].shape[1])
        return self._dim

    def close(self) -> None:
        """Releases open files (HDF5); the store is unusable afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *unused_exc):
        self.close()


def _unreadable(clip: str, path: str, error: Exception) -> FeaturesError:
    """The error for a clip's file that numpy cannot read, with the way back."""
    return FeaturesError(
        "clip %s: cannot read %s (%s); remove it and run video_caption.features over the "
        "clip's video again (it extracts the clips the store lacks), or put the file back"
        % (clip, path, error)
    )


class _FolderStore(FeatureStore):
    """``<clip>.npy`` and ``<clip>.npz`` files of one folder."""

    def __init__(self, path):
        files = {}
        for entry in sorted(os.listdir(path)):
            stem, extension = os.path.splitext(entry)
            if extension not in (".npy", ".npz") or entry.startswith("."):
                continue
            if stem in files:
                raise FeaturesError(
                    "%s: clip %s is stored twice (%s and %s); remove one"
                    % (path, stem, os.path.basename(files[stem]), entry)
                )
            files[stem] = os.path.join(path, entry)
        self._files = files
        super().__init__(path, files)

    def _load(self, clip):
        file_path = self._files[clip]
        try:
            loaded = np.load(file_path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise _unreadable(clip, file_path, e) from e
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                names = list(loaded.files)
                if "features" in names:
                    return loaded["features"], file_path
                if len(names) == 1:
                    return loaded[names[0]], file_path
            raise FeaturesError(
                "clip %s: %s holds the arrays %s; name the features "
                "array 'features' or store only it"
                % (clip, file_path, ", ".join(names) or "(none)")
            )
        return loaded, file_path

    @property
    def dim(self) -> int:
        """The feature size, read from the first clip (an .npy is memory-mapped)."""
        if self._dim is None:
            first = self._names[0]
            if self._files[first].endswith(".npy"):
                try:
                    shape = np.load(self._files[first], mmap_mode="r").shape
                except (OSError, ValueError) as e:
                    raise _unreadable(first, self._files[first], e) from e
                if len(shape) != 2:
                    raise FeaturesError(
                        "clip %s in %s: features must be 2-D [frames, "
                        "dim], got shape %s" % (first, self._files[first], shape)
                    )
                self._dim = int(shape[1])
            else:
                self._dim = int(self[first].shape[1])
        return self._dim


class _Hdf5Store(FeatureStore):
    """An HDF5 file with one top-level dataset per clip."""

    def __init__(self, path):
        try:
            self._file = h5py.File(path, "r")
        except OSError as e:
            raise FeaturesError("cannot open %s as HDF5: %s" % (path, e)) from e
        names = [name for name, item in self._file.items() if isinstance(item, h5py.Dataset)]
        try:
            super().__init__(path, names)
        except FeaturesError:
            self._file.close()
            raise

    def _load(self, clip):
        return self._file[clip][()], "%s:/%s" % (self.path, clip)

    @property
    def dim(self) -> int:
        """The feature size, read from the first dataset's shape."""
        if self._dim is None:
            first = self._names[0]
            shape = self._file[first].shape
            if len(shape) != 2:
                raise FeaturesError(
                    "clip %s in %s: features must be 2-D [frames, dim], "
                    "got shape %s" % (first, self.path, shape)
                )
            self._dim = int(shape[1])
        return self._dim

    def close(self) -> None:
        """Closes the HDF5 file."""
        self._file.close()


class _PickleStore(FeatureStore):
    """The arctic-capgen-vid pickle: a dict vidN -> [n, 1024] array, loaded at once.

    Pickles can run code when loaded: open only files from a source you trust.
    """

    def __init__(self, path):
        try:
            with open(path, "rb") as f:
                # Written by Python 2: latin1 decodes its numpy arrays byte for byte.
                data = pickle.load(f, encoding="latin1")
        except (OSError, pickle.UnpicklingError, EOFError, ValueError) as e:
            raise FeaturesError("cannot read the features pickle %s: %s" % (path, e)) from e
        if not isinstance(data, dict):
            raise FeaturesError(
                "%s: the pickle holds a %s, expected a dict clip -> "
                "[frames, dim] array" % (path, type(data).__name__)
            )
        self._data = {
            (k.decode("utf-8") if isinstance(k, bytes) else str(k)): v for k, v in data.items()
        }
        super().__init__(path, self._data)

    def _load(self, clip):
        return self._data[clip], self.path


def open_features(path: Union[str, os.PathLike]) -> "FeatureStore":
    """Opens a feature store as a read-only Mapping clip -> float32 [n, dim].

    Accepted forms:

    * a folder of ``<clip>.npy`` files, or ``<clip>.npz`` files (the array named
      ``features``, or the only array), as ``--format=npy`` writes;
    * an HDF5 file with one dataset per clip at the top level (``--format=hdf5``);
    * a pickle (``.pkl``/``.pickle``) of a dict clip -> array, such as arctic-capgen-vid's
      ``FEAT_key_vidID_value_features.pkl`` (keys ``vid1`` ... ``vid1970``).

    Clips are read when accessed (the pickle is read whole). ``store.dim`` is the feature
    size of the first clip.

    Args:
      path: the folder or file.

    Returns:
      A ``FeatureStore``.

    Raises:
      FeaturesError: the path does not exist, is of none of these forms or holds no
        clips; on access, a clip that is not a 2-D array (naming the clip and file).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return _FolderStore(path)
    if not os.path.exists(path):
        raise FeaturesError(
            "feature store %s does not exist; extract features with "
            "python -m video_caption.features" % path
        )
    if h5py.is_hdf5(path):
        return _Hdf5Store(path)
    if path.endswith((".pkl", ".pickle")):
        return _PickleStore(path)
    raise FeaturesError(
        "%s is not a feature store: expected a folder of .npy/.npz "
        "files, an HDF5 file, or a .pkl dict" % path
    )
