"""See et al.'s TF1 pointer-generator as its checkpoints hold it, at tiny sizes: every
variable under the original's names (TensorFlow 1.0's and 1.2.1's LSTM names), random
arrays for them, and a checkpoint written as the original's Saver writes it, for
tests/test_see_checkpoint.py and test_doc_summarizer.py."""

import numpy as np
import tensorflow as tf

V, E, H = 20, 4, 3
STEP = 1234
DEC = "seq2seq/decoder/attention_decoder/"
ENC = "seq2seq/encoder/bidirectional_rnn/"
LSTM = {"1.0": ("weights", "biases"), "1.2.1": ("kernel", "bias")}


def original_shapes(tf_version, coverage):
    """Every variable of See's model under the original's names, with its shape."""
    weights, biases = LSTM[tf_version]
    shapes = {"seq2seq/embedding/embedding": (V, E)}
    for scope, input_dim in ((ENC + "fw/", E), (ENC + "bw/", E), (DEC, E)):
        shapes[scope + "lstm_cell/" + weights] = (input_dim + H, 4 * H)
        shapes[scope + "lstm_cell/" + biases] = (4 * H,)
    for part in ("c", "h"):
        shapes["seq2seq/reduce_final_st/w_reduce_" + part] = (2 * H, H)
        shapes["seq2seq/reduce_final_st/bias_reduce_" + part] = (H,)
    for scope, rows, cols in (
        ("", E + 2 * H, E),
        ("Attention/", 2 * H, 2 * H),
        ("calculate_pgen/", 4 * H + E, 1),
        ("AttnOutputProjection/", 3 * H, H),
    ):
        shapes[DEC + scope + "Linear/Matrix"] = (rows, cols)
        shapes[DEC + scope + "Linear/Bias"] = (cols,)
    shapes[DEC + "W_h"] = (1, 1, 2 * H, 2 * H)
    shapes[DEC + "v"] = (2 * H,)
    if coverage:
        shapes[DEC + "coverage/w_c"] = (1, 1, 1, 2 * H)
    shapes["seq2seq/output_projection/w"] = (H, V)
    shapes["seq2seq/output_projection/v"] = (V,)
    return shapes


def original_arrays(tf_version, coverage, seed=0):
    """Random arrays for every variable of ``original_shapes``, by name."""
    rng = np.random.default_rng(seed)
    return {
        name: rng.normal(scale=0.7, size=shape).astype(np.float32)
        for name, shape in original_shapes(tf_version, coverage).items()
    }


def write_tf1_checkpoint(path, arrays, step=STEP):
    """A checkpoint as the original's Saver writes it, Adagrad slots and global_step too."""
    with tf.Graph().as_default():
        for name, value in arrays.items():
            tf.compat.v1.get_variable(name, initializer=value)
            tf.compat.v1.get_variable(name + "/Adagrad", initializer=np.full_like(value, 0.1))
        tf.compat.v1.get_variable("global_step", initializer=np.int64(step))
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, str(path))
