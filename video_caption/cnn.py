"""Per-frame CNN feature extractors: BVLC GoogLeNet (pool5/7x7_s1) and Inception v3.

MSVD captioning papers (Yao et al. 2015; the ACVI paper) describe every sampled frame by
the 1,024-d ``pool5/7x7_s1`` output of the Caffe ``bvlc_googlenet`` model (Szegedy et
al. 2015, "Going deeper with convolutions"). ``googlenet`` rebuilds that network in Keras
layer for layer, with each layer named after its Caffe blob ("/" written "_"), so that
weights converted from Caffe load by name. ``inception_v3`` wraps the Keras application
(2,048-d) as a stronger alternative.

No weights are downloaded. Without a weights file a network gets a fixed, seeded He-normal
initialisation (the same numbers on every machine) and a loud warning: its features are
then deterministic but not ImageNet features.

Usage::

  extractor = build_extractor("googlenet", "bvlc_googlenet.npy")
  features = extractor.extract(frames)        # frames [n, H, W, 3] -> float32 [n, 1024]
"""

import collections
import math
import os
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf import errors
from acvi_tf.compat import keras
from video_caption import frames as frames_lib

# The seed of the random initialisation used when no weights file is given.
RANDOM_INIT_SEED = 20151127

# Caffe BVLC preprocessing: the network was trained on BGR images in 0..255 minus the
# ImageNet channel means (B, G, R).
CAFFE_BGR_MEAN = (104.0, 117.0, 123.0)

# Filters of every GoogLeNet inception module (Szegedy et al. 2015, table 1):
# 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection.
INCEPTION_MODULES = collections.OrderedDict(
    [
        ("inception_3a", (64, 96, 128, 16, 32, 32)),
        ("inception_3b", (128, 128, 192, 32, 96, 64)),
        ("inception_4a", (192, 96, 208, 16, 48, 64)),
        ("inception_4b", (160, 112, 224, 24, 64, 64)),
        ("inception_4c", (128, 128, 256, 24, 64, 64)),
        ("inception_4d", (112, 144, 288, 32, 64, 64)),
        ("inception_4e", (256, 160, 320, 32, 128, 128)),
        ("inception_5a", (256, 160, 320, 32, 128, 128)),
        ("inception_5b", (384, 192, 384, 48, 128, 128)),
    ]
)


class WeightsError(errors.UserError, ValueError):
    """A weights file does not fit the network; the message names the file and layer."""


class CaffeMaxPool2D(keras.layers.Layer):
    """Max pooling with Caffe's output size: ceil((H + 2 pad - k) / stride) + 1.

    TensorFlow's "VALID" pooling rounds the output size down, Caffe rounds it up, so a
    112-pixel map pooled 3x3/2 gives 55 in TensorFlow and 56 in Caffe. The input is padded
    explicitly, ``pad`` on the top/left and as much as the last window needs on the
    bottom/right, with the lowest float so that padding never wins a max (Caffe ignores
    padded cells). As in Caffe, a last window that would start in the padding alone is
    dropped.
    """

    def __init__(self, pool_size: int, strides: int, pad: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool_size = int(pool_size)
        self.strides = int(strides)
        self.pad = int(pad)

    def _caffe_size(self, size):
        out = int(math.ceil((size + 2 * self.pad - self.pool_size) / self.strides)) + 1
        if self.pad and (out - 1) * self.strides >= size + self.pad:
            out -= 1
        return out

    def _extra(self, size):
        """Padding after the map so that VALID pooling yields Caffe's size."""
        out = self._caffe_size(size)
        return max(0, (out - 1) * self.strides + self.pool_size - size - self.pad)

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        """Pads [batch, H, W, C] inputs as Caffe would and max-pools them."""
        height, width = inputs.shape[1], inputs.shape[2]
        if height is None or width is None:
            raise ValueError("%s needs a static spatial size, got %s" % (self.name, inputs.shape))
        paddings = [[0, 0], [self.pad, self._extra(height)], [self.pad, self._extra(width)], [0, 0]]
        padded = tf.pad(inputs, paddings, constant_values=inputs.dtype.min)
        return tf.nn.max_pool2d(padded, self.pool_size, self.strides, "VALID")

    def compute_output_shape(self, input_shape: tf.TensorShape) -> tf.TensorShape:
        """[batch, H', W', C] with Caffe's rounded-up H' and W'."""
        shape = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape(
            [shape[0], self._caffe_size(shape[1]), self._caffe_size(shape[2]), shape[3]]
        )

    def get_config(self) -> dict:
        """The constructor arguments, for Keras serialisation."""
        config = super().get_config()
        config.update(pool_size=self.pool_size, strides=self.strides, pad=self.pad)
        return config


class CaffeLRN(keras.layers.Layer):
    """Caffe's cross-channel LRN: x / (1 + alpha / n * sum of x^2 over n channels)^beta.

    TensorFlow's ``local_response_normalization`` does not divide alpha by the window, so
    Caffe's ``local_size`` n, ``alpha`` and ``beta`` become ``depth_radius = (n - 1) / 2``
    and ``alpha / n``.
    """

    def __init__(
        self, local_size: int = 5, alpha: float = 1e-4, beta: float = 0.75, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.local_size = int(local_size)
        self.alpha = float(alpha)
        self.beta = float(beta)

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        """Normalises [batch, H, W, C] inputs across channels."""
        return tf.nn.local_response_normalization(
            inputs,
            depth_radius=(self.local_size - 1) // 2,
            bias=1.0,
            alpha=self.alpha / self.local_size,
            beta=self.beta,
        )

    def get_config(self) -> dict:
        """The constructor arguments, for Keras serialisation."""
        config = super().get_config()
        config.update(local_size=self.local_size, alpha=self.alpha, beta=self.beta)
        return config


def _conv(x, filters, kernel, name, strides=1):
    """Caffe convolution + in-place ReLU, padded by kernel // 2 on every side.

    Keras "SAME" pads a stride-1 convolution symmetrically as Caffe does; for the one
    strided convolution (conv1, 7x7/2 with pad 3) "SAME" would pad 2 before and 3 after,
    so that one gets Caffe's symmetric padding explicitly.
    """
    if strides == 1:
        padding = "same"
    else:
        x = keras.layers.ZeroPadding2D(kernel // 2, name=name + "_pad")(x)
        padding = "valid"
    return keras.layers.Conv2D(
        filters, kernel, strides=strides, padding=padding, activation="relu", name=name
    )(x)


def _inception(x, name, filters):
    """One inception module: four branches concatenated on channels (blob ``output``)."""
    n1x1, n3x3_reduce, n3x3, n5x5_reduce, n5x5, pool_proj = filters
    branch1 = _conv(x, n1x1, 1, name + "_1x1")
    branch3 = _conv(x, n3x3_reduce, 1, name + "_3x3_reduce")
    branch3 = _conv(branch3, n3x3, 3, name + "_3x3")
    branch5 = _conv(x, n5x5_reduce, 1, name + "_5x5_reduce")
    branch5 = _conv(branch5, n5x5, 5, name + "_5x5")
    # 3x3/1 pad 1: "same" max pooling ignores the padding, exactly as Caffe does.
    pool = keras.layers.MaxPooling2D(3, 1, padding="same", name=name + "_pool")(x)
    pool = _conv(pool, pool_proj, 1, name + "_pool_proj")
    return keras.layers.Concatenate(name=name + "_output")([branch1, branch3, branch5, pool])


def googlenet_network() -> keras.Model:
    """The BVLC GoogLeNet graph from a preprocessed 224x224x3 image to pool5/7x7_s1.

    Spatial sizes: conv1 112, pool1 56, conv2 56, pool2 28, inception_3* 28, pool3 14,
    inception_4* 14, pool4 7, inception_5* 7, pool5 1. The output is ``pool5_7x7_s1``
    flattened to 1,024 numbers (no dropout, no classifier).

    Returns:
      A functional ``keras.Model`` with freshly initialised (Keras default) weights.
    """
    image = keras.Input((224, 224, 3), name="data")
    x = _conv(image, 64, 7, "conv1_7x7_s2", strides=2)
    x = CaffeMaxPool2D(3, 2, name="pool1_3x3_s2")(x)
    x = CaffeLRN(5, 1e-4, 0.75, name="pool1_norm1")(x)
    x = _conv(x, 64, 1, "conv2_3x3_reduce")
    x = _conv(x, 192, 3, "conv2_3x3")
    x = CaffeLRN(5, 1e-4, 0.75, name="conv2_norm2")(x)
    x = CaffeMaxPool2D(3, 2, name="pool2_3x3_s2")(x)
    for name, filters in INCEPTION_MODULES.items():
        x = _inception(x, name, filters)
        if name == "inception_3b":
            x = CaffeMaxPool2D(3, 2, name="pool3_3x3_s2")(x)
        elif name == "inception_4e":
            x = CaffeMaxPool2D(3, 2, name="pool4_3x3_s2")(x)
    x = keras.layers.AveragePooling2D(7, 1, name="pool5_7x7_s1")(x)
    features = keras.layers.Flatten(name="pool5_flat")(x)
    return keras.Model(image, features, name="bvlc_googlenet")


def _weighted_layers(model):
    """The layers of ``model`` that hold weights, in graph order."""
    return [layer for layer in model.layers if layer.weights]


def random_init(model: keras.Model, seed: int = RANDOM_INIT_SEED) -> None:
    """Gives every convolution/dense kernel of ``model`` a seeded He-normal draw.

    Kernels are N(0, 2 / fan_in) (variance preserving through ReLUs), biases zero; other
    weights (batch-norm statistics) keep their Keras defaults. The numbers come from
    NumPy's legacy ``RandomState``, whose stream never changes between versions or
    machines, one stream per layer (seeded by ``seed`` and the layer's position).

    Args:
      model: a built Keras model.
      seed: the base seed.
    """
    for index, layer in enumerate(_weighted_layers(model)):
        if not isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense)):
            continue
        rng = np.random.RandomState((seed + 7919 * index) % (2**32))
        values = []
        for weight in layer.weights:
            shape = weight.shape.as_list()
            if "kernel" in weight.name:
                fan_in = int(np.prod(shape[:-1]))
                values.append(rng.normal(0.0, math.sqrt(2.0 / fan_in), shape))
            else:
                values.append(np.zeros(shape))
        layer.set_weights([v.astype(np.float32) for v in values])


def _warn_random(name):
    """The loud warning of a network that got no weights file."""
    bar = "!" * 78
    logging.warning(
        "%s HAS RANDOM WEIGHTS: its features are NOT ImageNet features.\n%s\n"
        "!! No weights file was given, so %s has a fixed seeded initialisation (seed %d).\n"
        "!! Its features are deterministic but no published result can be compared with\n"
        "!! them. Pass the weights with --cnn_weights=FILE (see video_caption/cnn.py).\n%s",
        name.upper(),
        bar,
        name,
        RANDOM_INIT_SEED,
        bar,
    )


def _read_npy_dict(path):
    """Reads a caffe-tensorflow ``.npy`` weights dict {layer: {weights, biases}}."""
    try:
        # The converter pickles a dict; files written by Python 2 need latin1 for arrays.
        data = np.load(path, allow_pickle=True, encoding="latin1")
    except (OSError, ValueError) as e:
        raise WeightsError("cannot read the weights file %s: %s" % (path, e)) from e
    if data.dtype == object and data.shape == ():
        data = data.item()
    if not isinstance(data, dict):
        raise WeightsError(
            "%s: expected a pickled dict {layer_name: {'weights': kernel, "
            "'biases': bias}} (caffe-tensorflow format), got %s" % (path, type(data).__name__)
        )

    def text(key):
        return key.decode("utf-8") if isinstance(key, bytes) else str(key)

    return {text(name).replace("/", "_"): params for name, params in data.items()}


def _layer_params(path, name, params):
    """(kernel, bias) of one layer entry, in either of the converter's two layouts."""
    if isinstance(params, dict):
        params = {(k.decode("utf-8") if isinstance(k, bytes) else k): v for k, v in params.items()}
        if "weights" not in params or "biases" not in params:
            raise WeightsError(
                "%s: layer %s has keys %s, expected 'weights' and "
                "'biases'" % (path, name, sorted(params))
            )
        return params["weights"], params["biases"]
    if isinstance(params, (list, tuple)) and len(params) == 2:
        return params[0], params[1]
    raise WeightsError(
        "%s: layer %s holds a %s, expected {'weights': kernel, "
        "'biases': bias}" % (path, name, type(params).__name__)
    )


def load_npy_weights(model: keras.Model, path: str) -> None:
    """Loads caffe-tensorflow weights into the convolutions of ``model`` by layer name.

    Args:
      model: the network (its weighted layers are named after the Caffe blobs).
      path: a ``.npy`` file holding {layer_name: {"weights": HWIO kernel, "biases": bias}}
        ("/" in names may be written "/" or "_"). Extra layers (the auxiliary and final
        classifiers) are ignored.

    Raises:
      WeightsError: the file cannot be read, a layer is missing, or a shape differs; the
        message names the layer and the expected shape. No layer is changed then.
    """
    data = _read_npy_dict(path)
    # Every layer is checked before any is set, so a file that does not fit leaves the
    # model as it was.
    assignments = []
    for layer in _weighted_layers(model):
        if layer.name not in data:
            raise WeightsError(
                "%s: has no weights for layer %s (kernel %s); is it a "
                "caffe-tensorflow conversion of bvlc_googlenet?"
                % (path, layer.name, layer.weights[0].shape.as_list())
            )
        kernel, bias = _layer_params(path, layer.name, data[layer.name])
        values = [np.asarray(kernel), np.asarray(bias)]
        for weight, value, what in zip(layer.weights, values, ("weights", "biases")):
            expected = tuple(weight.shape.as_list())
            if value.shape != expected:
                raise WeightsError(
                    "%s: layer %s '%s' has shape %s, expected %s (kernels "
                    "are [height, width, in, out])"
                    % (path, layer.name, what, value.shape, expected)
                )
        assignments.append((layer, [v.astype(np.float32) for v in values]))
    for layer, values in assignments:
        layer.set_weights(values)
    used = {layer.name for layer, _ in assignments}
    ignored = sorted(set(data) - used)
    if ignored:
        logging.info(
            "%s: ignored %d layers not in the network: %s", path, len(ignored), ", ".join(ignored)
        )


def load_weights(model: keras.Model, path: str) -> None:
    """Loads a weights file into a GoogLeNet built by ``googlenet_network``.

    Args:
      model: the network.
      path: a caffe-tensorflow ``.npy`` dict (see ``load_npy_weights``) or a Keras
        ``.h5`` weights file saved from this network (``model.save_weights``).

    Raises:
      WeightsError: the file is missing, of an unknown kind, or does not fit.
    """
    _check_exists(path)
    if path.endswith(".npy"):
        load_npy_weights(model, path)
    elif path.endswith((".h5", ".hdf5")):
        try:
            model.load_weights(path)
        except (ValueError, OSError) as e:
            raise WeightsError(
                "%s: cannot load these Keras weights into GoogLeNet: %s" % (path, e)
            ) from e
    else:
        raise WeightsError(
            "%s: unknown weights file type; use a caffe-tensorflow .npy "
            "dict or a Keras .h5 file saved from video_caption.cnn."
            "googlenet" % path
        )
    logging.info("GoogLeNet weights loaded from %s", path)


def googlenet(weights: Optional[str] = None) -> keras.Model:
    """BVLC GoogLeNet up to ``pool5/7x7_s1`` (224x224x3 Caffe-preprocessed -> 1,024).

    Args:
      weights: None (seeded random initialisation and a warning), a Keras ``.h5``
        weights file saved from this model, or a caffe-tensorflow ``.npy`` dict.

    Returns:
      The Keras model.

    Raises:
      WeightsError: the weights file is missing, of an unknown kind, or does not fit.
    """
    if weights is not None:
        _check_exists(weights)  # before the (slow) build
    model = googlenet_network()
    if weights is None:
        random_init(model)
        _warn_random("googlenet")
    else:
        load_weights(model, weights)
    return model


def inception_v3(weights: Optional[str] = None) -> keras.Model:
    """Keras Inception v3 without its classifier, average pooled (299x299x3 -> 2,048).

    Args:
      weights: None (seeded random initialisation and a warning) or the path of the
        Keras ImageNet weights file without top
        (``inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5``). Nothing is ever
        downloaded.

    Returns:
      The Keras model.

    Raises:
      WeightsError: the weights file is missing or does not fit.
    """
    if weights is not None:
        _check_exists(weights)
    try:
        model = keras.applications.InceptionV3(
            include_top=False, pooling="avg", input_shape=(299, 299, 3), weights=weights or None
        )
    except (ValueError, OSError) as e:
        raise WeightsError(
            "%s: cannot load these weights into Inception v3 (it needs the "
            "'notop' ImageNet .h5 file): %s" % (weights, e)
        ) from e
    if weights is None:
        random_init(model)
        _warn_random("inception_v3")
    return model


def _check_exists(path):
    if not os.path.isfile(path):
        raise WeightsError(
            "weights file %s does not exist; pass an existing file with "
            "--cnn_weights, or leave it out for random features" % path
        )


def caffe_preprocess(images: tf.Tensor) -> tf.Tensor:
    """BVLC preprocessing: RGB 0..255 -> BGR minus the ImageNet channel means."""
    images = tf.convert_to_tensor(images, tf.float32)
    return images[..., ::-1] - tf.constant(CAFFE_BGR_MEAN, tf.float32)


def inception_preprocess(images: tf.Tensor) -> tf.Tensor:
    """Keras Inception v3 preprocessing: RGB 0..255 -> -1..1."""
    images = tf.convert_to_tensor(images, tf.float32)
    return keras.applications.inception_v3.preprocess_input(images)


# name -> (builder(weights), input size, preprocess(images 0..255 RGB), feature size)
CNN = collections.namedtuple("CNN", "builder input_size preprocess dim")
CNNS = {
    "googlenet": CNN(googlenet, 224, caffe_preprocess, 1024),
    "inception_v3": CNN(inception_v3, 299, inception_preprocess, 2048),
}


class Extractor:
    """Frames in, one feature vector per frame out.

    Attributes:
      name: the CNN's registry name.
      weights: the weights file, or None for the random initialisation.
      input_size: the side of the square the frames are resized and cropped to.
      dim: the feature size.
      batch_size: the most frames in one forward pass (the compiled function takes any
        number, traced once; a video's last pass takes the frames left).
      model: the Keras model.
    """

    def __init__(
        self,
        name: str,
        model: keras.Model,
        input_size: int,
        preprocess: Callable[[tf.Tensor], tf.Tensor],
        dim: int,
        batch_size: int = 32,
        weights: Optional[str] = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1, got %d" % batch_size)
        self.name = name
        self.weights = weights
        self.model = model
        self.input_size = input_size
        self.dim = dim
        self.batch_size = batch_size
        self._preprocess = preprocess
        # the forward pass over a batch of resized, cropped frames, traced once for any count
        self.forward = tf.function(
            self._forward_batch,
            input_signature=[tf.TensorSpec([None, input_size, input_size, 3], tf.float32)],
        )

    def _forward_batch(self, images):
        return self.model(self._preprocess(images), training=False)

    def extract(self, frames: np.ndarray) -> np.ndarray:
        """Features of every frame.

        Args:
          frames: [n, H, W, 3] RGB frames, uint8 or float in 0..255, any size (they are
            resized and centre-cropped to ``input_size``).

        Returns:
          float32 [n, dim].
        """
        images = frames_lib.resize_and_crop(frames, self.input_size)
        count = len(images)
        outputs = []
        for start in range(0, count, self.batch_size):
            batch = images[start : start + self.batch_size]
            outputs.append(self.forward(tf.constant(batch)).numpy())
        if not outputs:
            return np.zeros((0, self.dim), np.float32)
        return np.concatenate(outputs).astype(np.float32)


def build_extractor(name: str, weights: Optional[str] = None, batch_size: int = 32) -> Extractor:
    """Builds a registered CNN with its input size and preprocessing.

    Args:
      name: a key of ``CNNS`` ("googlenet" or "inception_v3").
      weights: a weights file, or None for the seeded random initialisation.
      batch_size: frames per forward pass.

    Returns:
      An ``Extractor``.

    Raises:
      ValueError: an unknown name. WeightsError: the weights do not fit.
    """
    if name not in CNNS:
        raise ValueError("unknown CNN %r; choose one of %s" % (name, ", ".join(CNNS)))
    spec = CNNS[name]
    model = spec.builder(weights)
    return Extractor(name, model, spec.input_size, spec.preprocess, spec.dim, batch_size, weights)
