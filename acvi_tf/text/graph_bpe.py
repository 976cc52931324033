"""subword-nmt's BPE segmentation (``apply_bpe.py``, codes ``#version: 0.2``) in TensorFlow
ops, so that an exported translator segments new text in its graph exactly as the corpus
builder did with subword-nmt (``acvi_tf.formats.bpe``).

Each word becomes its characters, the last one marked with ``</w>``. Then, while some
adjacent pair of symbols is a merge of the codes, every word merges all occurrences of
its best-ranked pair (earliest line of the codes), left to right without overlap
("x x x" -> "xx x"). ``</w>`` is dropped, and every segment but a word's last gets the
``@@`` separator.
"""

import tensorflow as tf

_END = "</w>"
_NO_MERGE = tf.int32.max


def read_ranks(codes_path: str) -> tf.lookup.StaticHashTable:
    """``"left right" -> rank`` (the line number among the merges, the first line where a
    pair appears twice) of a subword-nmt codes file."""
    pairs = {}
    with open(codes_path, encoding="utf-8") as f:
        lines = [line.strip("\r\n ") for line in f]
    if lines and lines[0].startswith("#version:"):
        if lines[0].split()[-1] != "0.2":
            raise ValueError("%s: only subword-nmt codes of version 0.2 are supported" % codes_path)
        lines = lines[1:]
    for rank, line in enumerate(lines):
        if line:
            pairs.setdefault(line, rank)
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            list(pairs), tf.constant(list(pairs.values()), tf.int32)
        ),
        default_value=_NO_MERGE,
    )


def _merge_once(symbols, ranks):
    """One merge step of every word (rows of ``symbols`` [N, C], "" padded)."""
    left, right = symbols[:, :-1], symbols[:, 1:]
    valid = tf.logical_and(tf.not_equal(left, ""), tf.not_equal(right, ""))
    rank = tf.where(valid, ranks.lookup(tf.strings.join([left, right], " ")), _NO_MERGE)
    best = tf.reduce_min(rank, axis=1, keepdims=True)
    candidate = tf.logical_and(tf.equal(rank, best), best < _NO_MERGE)
    # Left-to-right without overlap: in a run of consecutive candidate positions, those at
    # an even offset from the run's start merge.
    position = tf.broadcast_to(tf.range(tf.shape(candidate)[1]), tf.shape(candidate))
    run = tf.cumsum(tf.cast(tf.logical_not(candidate), tf.int32), axis=1)
    rows = tf.shape(candidate)[0]
    segment = tf.range(rows)[:, tf.newaxis] * (tf.shape(candidate)[1] + 1) + run
    first = tf.math.unsorted_segment_min(
        tf.reshape(position, [-1]), tf.reshape(segment, [-1]), rows * (tf.shape(candidate)[1] + 1)
    )
    start = tf.gather(first, segment) + tf.cast(run > 0, tf.int32)
    merge = tf.logical_and(candidate, tf.equal((position - start) % 2, 0))
    merged = tf.concat([tf.where(merge, tf.strings.join([left, right]), left), symbols[:, -1:]], 1)
    dropped = tf.pad(merge, [[0, 0], [1, 0]])
    kept = tf.ragged.boolean_mask(merged, tf.logical_and(tf.logical_not(dropped), merged != ""))
    return kept.to_tensor(""), tf.reduce_any(candidate)


def segment(tokens: tf.RaggedTensor, ranks: tf.lookup.StaticHashTable) -> tf.RaggedTensor:
    """The BPE segments of each row of ``tokens`` [B, (words)], with ``@@`` separators.

    Args:
      tokens: string words, none empty.
      ranks: ``read_ranks`` of the codes.

    Returns:
      A string ``tf.RaggedTensor`` [B, (segments)].
    """
    chars = tf.strings.unicode_split(tokens.flat_values, "UTF-8")
    last = chars.row_splits[1:] - 1
    flat = tf.tensor_scatter_nd_update(
        chars.flat_values,
        last[:, tf.newaxis],
        tf.strings.join([tf.gather(chars.flat_values, last), _END]),
    )
    symbols = chars.with_flat_values(flat).to_tensor("", shape=[None, None])

    def body(symbols, _):
        return _merge_once(symbols, ranks)

    symbols, _ = tf.while_loop(
        lambda symbols, more: more,
        body,
        [symbols, tf.shape(symbols)[1] > 1],
        shape_invariants=[tf.TensorShape([None, None]), tf.TensorShape([])],
    )
    words = tf.ragged.boolean_mask(symbols, symbols != "")
    words = tf.ragged.map_flat_values(tf.strings.regex_replace, words, _END + "$", "")
    not_last = tf.ragged.map_flat_values(
        tf.not_equal,
        tf.ragged.range(words.row_lengths()),
        tf.repeat(words.row_lengths() - 1, words.row_lengths()),
    )
    separated = tf.where(not_last.flat_values, words.flat_values + "@@", words.flat_values)
    return tokens.with_flat_values(words.with_flat_values(separated)).merge_dims(1, 2)
