"""The corpus files the builders in ``data_prep`` write and the hosts read.

``bin_files`` and ``see_vocab`` are See et al.'s summarization corpus (``.bin`` chunks of
``tf.train.Example`` records, a ``word count`` vocabulary); ``text_files`` and ``bpe`` are
tensorflow/nmt's (one sentence per line, a one-token-per-line vocabulary, joint BPE);
``frame_features`` reads the captioner's stores of per-frame CNN features and
``video_folder`` names the clips of a folder of videos.
"""
