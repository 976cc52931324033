"""The frozen config every entry point runs on (``acvi_tf.config``)."""

import json

import pytest
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags


def _define(fv):
    """A command's flags: one of its own, a list flag, the shared ones, and a flag some
    other module defines on the same ``FlagValues``."""
    acvi_flags.define_flags(fv)
    flags.DEFINE_integer("steps", 10, "Steps.", flag_values=fv)
    flags.DEFINE_list("splits", ["val", "test"], "Splits.", flag_values=fv)
    flags.DEFINE_boolean("verbose", False, "A library's.", flag_values=fv, module_name="lib")
    flags.DEFINE_integer("width", 4, "Width.", short_name="w", flag_values=fv)


def test_values_read_as_attributes_and_items_and_cannot_change():
    config = config_lib.parse(_define, ["prog", "--steps=3", "--splits=a,b", "-w", "7"])
    assert (config.steps, config["steps"], config.context) == (3, 3, "acvi")
    assert config.splits == ("a", "b")  # a list flag is a tuple
    assert config.width == 7 and "w" not in config  # a short name is not a second flag
    with pytest.raises(AttributeError, match="read-only: use replace"):
        config.steps = 4
    with pytest.raises(TypeError):
        config["steps"] = 4
    with pytest.raises(AttributeError, match="no flag --stpes"):
        config.stpes  # noqa: B018


def test_given_and_recorded_flags():
    config = config_lib.parse(_define, ["prog", "--steps=3", "--kl_weight=0.5"])
    assert config.given == {"steps", "kl_weight"}
    assert {"steps", "splits", "width", "context", "kl_weight"} <= config.recorded
    assert "verbose" not in config.recorded and "verbose" in config
    assert "verbose" not in config.record()
    assert config.record()["splits"] == ["val", "test"]


def test_replace_makes_a_new_config_and_refuses_an_unknown_flag():
    config = config_lib.parse(_define, ["prog", "--steps=3"])
    changed = config.replace(steps=5, splits=["x"])
    assert (changed.steps, changed.splits, config.steps) == (5, ("x",), 3)
    assert changed.given == config.given and changed.recorded == config.recorded
    with pytest.raises(AttributeError, match="no flag --nope"):
        config.replace(nope=1)


def test_a_list_flag_survives_the_run_record(tmp_path, caplog):
    """A resume compares the record's JSON lists with the config's tuples: unchanged
    lists are no change, a changed one is."""
    config = config_lib.parse(_define, ["prog", "--splits=a,b"])
    acvi_flags.write_flag_record(str(tmp_path), config)
    assert json.loads((tmp_path / "hparams.json").read_text())["splits"] == ["a", "b"]
    with caplog.at_level("INFO"):
        acvi_flags.write_flag_record(str(tmp_path), config, resume_model_flags=("splits",))
    assert "changed flags" not in caplog.text
    with pytest.raises(acvi_flags.FlagChangeError, match="--splits=\\['a', 'b'\\]"):
        acvi_flags.compare_flag_record(str(tmp_path), config.replace(splits=["c"]), ("splits",))


def test_a_home_folder_after_the_equals_sign_is_expanded_as_the_shell_expands_it_after_a_space(
    monkeypatch,
):
    monkeypatch.setenv("HOME", "/home/someone")
    argv = ["prog", "--input=~/in.txt", "--out_dir=~", "--text=a~b", "~/positional", "--x=~user"]
    assert config_lib.expand_home(argv) == [
        "prog",
        "--input=/home/someone/in.txt",
        "--out_dir=/home/someone",
        "--text=a~b",
        "~/positional",
        "--x=~user",
    ]
