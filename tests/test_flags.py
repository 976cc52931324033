"""Shared absl flags: defaults, validators, and the layer they build."""

import importlib
import json
import math
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf
from absl import flags
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorflow.python.framework import config as tf_config

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, kl_schedule
from acvi_tf.runner import runner
from acvi_tf.training import trainer as trainer_lib
from pointer_generator import run_summarization
from pointer_generator import task as pg_task
from video_caption import experiment as vc_experiment
from video_caption import run_captioning

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parse(*argv):
    return config_lib.parse(acvi_flags.define_flags, ["prog", *argv])


def test_defaults_are_the_arxiv_model_with_the_studys_kl():
    fv = _parse()
    layer = builders.context_layer(fv)
    assert isinstance(layer, acvi_lib.ACVIContext)
    config = layer.get_config()
    assert (
        config["variance_net"],
        config["sampling"],
        config["gumbel_fraction"],
        config["noise"],
        config["kl"],
        config["kl_weight"],
        config["decode"],
        config["num_samples"],
    ) == ("mlp", "approx", 0.0, "collapsed", "bound", 0.001, "mean", 1)
    assert config["seed"] == 111


def test_unset_kl_weight_gives_each_mechanism_its_own():
    weights = {
        mode: builders.context_layer(_parse("--context=" + mode)).kl_weight
        for mode in ("acvi", "ved", "variational")
    }
    assert weights == {"acvi": acvi_lib.ACVI_KL_WEIGHT, "ved": 0.1, "variational": 1.0}
    assert builders.context_layer(_parse("--context=ved", "--kl_weight=0.5")).kl_weight == 0.5


def test_flags_reach_the_layer():
    fv = _parse(
        "--acvi_variance_net=relu",
        "--acvi_gumbel_fraction=0.1",
        "--acvi_gumbel_temperature=0.3",
        "--acvi_noise=per_component",
        "--acvi_num_samples=3",
        "--acvi_kl=bound",
        "--kl_weight=0.25",
        "--acvi_decode=sample",
        "--acvi_log_var_min=-4",
        "--acvi_log_var_max=2",
        "--seed=5",
    )
    config = builders.context_layer(fv).get_config()
    assert (
        config["variance_net"],
        config["gumbel_fraction"],
        config["gumbel_temperature"],
        config["noise"],
        config["num_samples"],
        config["kl"],
        config["kl_weight"],
        config["decode"],
        config["log_var_min"],
        config["log_var_max"],
        config["seed"],
    ) == ("relu", 0.1, 0.3, "per_component", 3, "bound", 0.25, "sample", -4.0, 2.0, 5)
    assert isinstance(builders.context_layer(_parse("--context=sa")), context.SoftAttentionContext)
    mixture = _parse("--acvi_sampling=mixture", "--acvi_feed=mean", "--acvi_enumerate_top=4")
    config = builders.context_layer(mixture).get_config()
    assert (config["feed"], config["enumerate_top"]) == ("mean", 4)


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--context=hard"], "context"),
        (["--acvi_noise=shared"], "acvi_noise"),
        (["--acvi_num_samples=0"], "acvi_num_samples"),
        (["--acvi_gumbel_fraction=1.5"], "acvi_gumbel_fraction"),
        (["--acvi_gumbel_temperature=0"], "must be > 0"),
        (["--kl_weight=-1"], "kl_weight"),
        (["--kl_weight=nan"], "--kl_weight must be a finite number"),
        (["--acvi_log_var_max=inf"], "--acvi_log_var_max must be a finite number"),
        (["--acvi_log_var_min=2", "--acvi_log_var_max=1"], "smaller than"),
        (["--acvi_sampling=gumbel", "--acvi_gumbel_fraction=0.1"], "leave the fraction at 0"),
        (["--acvi_sampling=mixture", "--acvi_gumbel_fraction=0.1"], "leave the fraction at 0"),
        (["--acvi_kl=exact", "--acvi_sampling=mixture"], "acvi_kl=exact"),
        (["--acvi_kl=exact", "--acvi_gumbel_fraction=0.1"], "acvi_kl=exact"),
        (["--acvi_sampling=mixture", "--kl_free_bits=1"], "kl_free_bits"),
        (["--acvi_feed=mean"], "add --acvi_sampling=mixture"),
        (["--acvi_sampling=mixture", "--acvi_enumerate_top=2"], "add --acvi_feed=mean"),
    ],
)
def test_bad_values_are_rejected_with_a_message(argv, match):
    with pytest.raises(flags.IllegalFlagValueError, match=match):
        _parse(*argv)


def test_kl_schedule_flags():
    assert builders.kl_schedule(_parse()) == kl_schedule.KLSchedule()
    fv = _parse("--kl_annealing=linear", "--kl_anneal_steps=50", "--kl_free_bits=0.5")
    assert builders.kl_schedule(fv) == kl_schedule.KLSchedule("linear", 50, 0.5)
    with pytest.raises(flags.IllegalFlagValueError, match="kl_free_bits"):
        _parse("--kl_free_bits=-1")


@pytest.mark.parametrize(
    "argv, warns",
    [
        (["--context=acvi", "--acvi_kl=mc"], True),
        (["--context=acvi", "--acvi_kl=mc", "--acvi_sampling=gumbel"], True),
        (["--context=acvi", "--acvi_kl=mc", "--acvi_sampling=mixture"], False),
        (["--context=acvi", "--acvi_kl=exact"], False),
        (["--context=sa", "--acvi_kl=mc"], False),
    ],
)
def test_mc_without_mixture_sampling_warns_once(argv, warns, caplog):
    builders.context_layer(_parse(*argv))
    said = [r for r in caplog.records if "--acvi_kl=mc" in r.getMessage()]
    assert len(said) == int(warns)
    assert all("docs/acvi.md" in r.getMessage() for r in said)


def test_gumbel_fraction_needs_the_number_of_training_steps():
    fv = flags.FlagValues()
    acvi_flags.define_flags(fv)
    flags.DEFINE_integer("max_steps", 0, "", flag_values=fv)
    acvi_flags.require_total_steps(
        ["max_steps"], lambda d: d["max_steps"] > 0, "set --max_steps", fv
    )
    fv(["prog", "--acvi_gumbel_fraction=0.1", "--max_steps=100"])
    fv.unparse_flags()
    fv(["prog", "--max_steps=0"])
    fv.unparse_flags()
    with pytest.raises(flags.IllegalFlagValueError, match="not known here; set --max_steps"):
        fv(["prog", "--acvi_gumbel_fraction=0.1"])


PACKAGES = ("acvi_tf", "pointer_generator", "nmt", "video_caption", "data_prep")


def _modules():
    """``(module, source)`` of every module of the project's packages, and of each bench
    script by its file name (bench/ is a folder of scripts, not a package)."""
    found = []
    for package in PACKAGES:
        for folder, _, names in os.walk(os.path.join(ROOT, package)):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                module = os.path.relpath(path, ROOT)[: -len(".py")].replace(os.sep, ".")
                found.append((module.removesuffix(".__init__"), open(path).read()))
    for name in sorted(os.listdir(os.path.join(ROOT, "bench"))):
        if name.endswith(".py"):
            found.append((name[: -len(".py")], open(os.path.join(ROOT, "bench", name)).read()))
    return found


# The generic command, whose flags are those of the Task's command it picks
# (``test_runner_command.py`` checks them against each host's own command).
GENERIC = "acvi_tf.runner.__main__"


def _entry_points():
    """The project's commands: every module of the packages with a ``__main__`` block,
    but the generic command."""
    return [
        module
        for module, source in _modules()
        if module.split(".")[0] in PACKAGES
        and 'if __name__ == "__main__":' in source
        and module != GENERIC
    ]


# What a command that draws, tokenises or exports nothing does not load at its start
# (about two seconds of it): Keras 3 (``acvi_tf`` turns the legacy-Keras switch on), matplotlib,
# NLTK and tensorflow-text (each imported where it is used).
_LOADED_WHEN_USED = ("keras.src", "matplotlib", "nltk", "tensorflow_text")


def test_importing_a_module_defines_no_flag():
    """Flags exist only once a command's ``define_flags`` runs: importing every module of
    the project, the bench scripts too, defines none (a fresh process, so this suite's
    own definitions do not count); each command and bench script defines them in
    ``define_flags`` and runs through ``config.run_command`` (a training command through
    the Runner, ``runner.main``, which calls it). Importing the hosts' commands, first,
    loads none of ``_LOADED_WHEN_USED``."""
    modules = dict(_modules())
    assert {"nmt.run_nmt", "data_prep.pig_latin", "acvi_tf.builders", "train_step"} <= set(modules)
    hosts = [m for m in _entry_points() if not m.startswith("data_prep.")]
    assert {"nmt.translate", "pointer_generator.summarize", "video_caption.export"} <= set(hosts)
    code = (
        "import sys\n"
        + "".join("import %s\n" % module for module in hosts)
        + "print(sorted(set(sys.modules) & %r))\n" % set(_LOADED_WHEN_USED)
        + "sys.path.insert(0, 'bench')\n"
        + "from absl import flags\n"
        + "".join("import %s\n" % module for module in modules)
        + "print(sorted(set(flags.FLAGS.flags_by_module_dict()) & %r))\n" % set(modules)
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip().splitlines()[-2:] == ["[]", "[]"], done.stdout[-2000:]
    for module, source in modules.items():
        # bench/'s helpers (_report: its __main__ renders BENCHMARKS.md) take no flags
        if 'if __name__ == "__main__":' in source and not module.startswith("_"):
            runs = ("config_lib.run_command(define_flags, run", "runner.main(TASK)")
            runs += ("command.main()",) if module == GENERIC else ()
            assert any(r in source for r in runs), module


def test_helpshort_of_every_command_lists_every_flag_it_defines():
    """``--helpshort`` shows the main module's key flags: every flag of the command, also
    those a helper module defines for it (the builders' ``--tokenizer``, the export's
    run flags) and the shared ones."""
    for module in _entry_points():
        define_flags = importlib.import_module(module).define_flags
        flag_values = flags.FlagValues()
        config_lib.define_command_flags(define_flags, flag_values, "main.py")
        listed = set(re.findall(r"^  --(?:\[no\])?(\w+)", flag_values.module_help("main.py"), re.M))
        defined = {flag_values[name].name for name in flag_values}
        assert listed >= defined and listed, module
    assert {"tokenizer", "input", "out_dir"} <= _helpshort("data_prep.summarization")
    assert {"export_dir", "log_root", "exp_name"} <= _helpshort("pointer_generator.export")


# Flag names that are a learning rate or a dropout rate, in any entry point.
_LEARNING_RATE = re.compile(r"(^|_)(lr|learning_rate)$")
_DROPOUT = re.compile(r"dropout")


def test_every_learning_rate_must_be_positive_and_every_dropout_below_1():
    """A learning rate of 0 would train nothing and a dropout of 1 crash Keras: every
    entry point that defines such a float flag refuses it at parse time, in one line."""
    checked = []
    for module in _entry_points():
        define_flags = importlib.import_module(module).define_flags
        fv = flags.FlagValues()
        define_flags(fv)
        for name in sorted(fv):
            if not isinstance(fv[name].parser, flags.FloatParser):
                continue
            if _LEARNING_RATE.search(name):
                bad, good, message = "0", "0.5", "--%s must be > 0" % name
            elif _DROPOUT.search(name):
                bad, good, message = "1", "0", "--%s must be in [0, 1)" % name
            else:
                continue
            config_lib.parse(define_flags, [module, "--%s=%s" % (name, good)])
            with pytest.raises(flags.IllegalFlagValueError, match=re.escape(message)):
                config_lib.parse(define_flags, [module, "--%s=%s" % (name, bad)])
            checked.append("%s --%s" % (module, name))
    assert set(checked) >= {
        "pointer_generator.run_summarization --lr",
        "pointer_generator.run_summarization --transformer_dropout",
        "nmt.run_nmt --learning_rate",
        "nmt.run_nmt --dropout",
        "video_caption.run_captioning --learning_rate",
        "video_caption.run_captioning --dropout",
    }


def _helpshort(module):
    done = subprocess.run(
        [sys.executable, "-m", module, "--helpshort"],
        capture_output=True,
        text=True,
        check=False,  # absl's help flags exit with status 1
        cwd=ROOT,
    )
    return set(re.findall(r"^  --(?:\[no\])?(\w+)", done.stdout, re.M))


def test_configure_runtime_sets_precision_seed_and_determinism():
    fv = _parse("--mixed_precision=float16", "--seed=3")
    try:
        builders.configure_runtime(fv)
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
        first = tf.random.uniform([3]).numpy()
        builders.configure_runtime(fv)
        assert (tf.random.uniform([3]).numpy() == first).all()
        assert not tf_config.is_op_determinism_enabled()
        builders.configure_runtime(_parse("--deterministic"))
        assert tf_config.is_op_determinism_enabled()
        assert keras.mixed_precision.global_policy().name == "float32"
        builders.configure_runtime(_parse("--mixed_precision=bfloat16"))
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    finally:
        tf_config.disable_op_determinism()


def test_a_resume_refuses_a_changed_model_flag_and_logs_the_others(tmp_path, absl_caplog):
    acvi_flags.write_flag_record(str(tmp_path), _parse("--kl_weight=0.01"))
    changed = _parse("--kl_weight=0.1", "--seed=3")
    acvi_flags.write_flag_record(str(tmp_path), changed, resume_model_flags=())
    caplog = absl_caplog
    assert "--kl_weight 0.01 -> 0.1, --seed 111 -> 3" in caplog.text
    with pytest.raises(
        acvi_flags.FlagChangeError,
        match=r"hparams.json: the run was trained with --context=acvi, this command gives "
        r"--context=sa, which changes the model; leave --context out to use the run's value",
    ):
        acvi_flags.write_flag_record(str(tmp_path), _parse("--context=sa"), resume_model_flags=())
    # the entry point's own model flags count too
    with pytest.raises(acvi_flags.FlagChangeError, match="--seed=3, this command gives --seed=4"):
        acvi_flags.compare_flag_record(str(tmp_path), _parse("--seed=4"), ("seed",))
    # a new run (no resume) is not compared, and its record replaces the old one
    acvi_flags.write_flag_record(str(tmp_path), _parse("--context=sa"))
    acvi_flags.compare_flag_record(str(tmp_path), _parse("--context=sa"), ())


@pytest.mark.parametrize(
    "host, names",
    [
        ("pointer_generator.run_summarization", ["vocab_path", "summary_data_path"]),
        ("nmt.run_nmt", ["train_prefix", "dev_prefix", "test_prefix", "vocab_prefix"]),
        ("video_caption.run_captioning", ["data_dir", "features"]),
    ],
)
def test_the_files_a_record_names_are_recorded_as_absolute_paths(
    tmp_path, monkeypatch, host, names
):
    """A later command (translate, an export, a resume) may start in another folder than
    the training did: the record names the same files from there."""
    monkeypatch.chdir(tmp_path)
    define_flags = importlib.import_module(host).define_flags
    config = config_lib.parse(define_flags, ["prog", *("--%s=c/%s" % (n, n) for n in names)])
    assert [config[n] for n in names] == [str(tmp_path / "c" / n) for n in names]
    acvi_flags.write_flag_record(str(tmp_path), config)
    record = json.loads((tmp_path / acvi_flags.RECORD).read_text())
    assert [record[n] for n in names] == [str(tmp_path / "c" / n) for n in names]
    config = config_lib.parse(define_flags, ["prog", "--%s=~/x" % names[0], "--%s=" % names[1]])
    assert (config[names[0]], config[names[1]]) == (os.path.expanduser("~/x"), "")


def test_a_refused_run_leaves_what_another_trainer_writes_to_its_new_folder(tmp_path):
    """Two trainers started together on a new folder: the one refused (by the other's
    lock, or for its own data) removes nothing of the other's."""
    run = tmp_path / "run"
    for refusal in (files.FolderInUseError("in use"), acvi_flags.DataChangeError("data")):
        with pytest.raises(type(refusal)):
            with acvi_flags.refused_run_undone(str(run)):
                run.mkdir(exist_ok=True)  # the other trainer's folder, record and lock
                (run / "hparams.json").write_text("{}")
                lock = files.lock_file(str(run / trainer_lib.LOCK_FILE), str(run), "trainer")
                raise refusal
        assert sorted(os.listdir(run)) == ["hparams.json", trainer_lib.LOCK_FILE]
        lock.close()
    with pytest.raises(acvi_flags.DataChangeError):  # no one holds it: this one's, removed
        with acvi_flags.refused_run_undone(str(tmp_path / "mine")):
            (tmp_path / "mine").mkdir()
            raise acvi_flags.DataChangeError("data")
    assert not (tmp_path / "mine").exists()
    # locked out by a trainer that started with it, after both wrote the same record:
    # the record stays, the other trainer's
    raced = tmp_path / "raced"
    with pytest.raises(files.FolderInUseError):
        with acvi_flags.refused_run_undone(str(raced)):
            raced.mkdir()
            with acvi_flags.training_record(str(raced), _parse(), None):
                lock = files.lock_file(str(raced / trainer_lib.LOCK_FILE), str(raced), "trainer")
                raise files.FolderInUseError("in use")
    assert sorted(os.listdir(raced)) == ["hparams.json", trainer_lib.LOCK_FILE]
    lock.close()


def test_a_new_run_refuses_a_folder_that_holds_another_commands_record(tmp_path):
    record = tmp_path / "hparams.json"
    acvi_flags.write_flag_record(str(tmp_path), _parse("--kl_weight=0.01"))
    theirs = dict(json.loads(record.read_text()), encoder_units=512, decoder_units=512)
    record.write_text(json.dumps(theirs))
    with pytest.raises(
        acvi_flags.FlagChangeError,
        match=r"hparams.json records the flags --decoder_units, --encoder_units, which this "
        r"command does not have",
    ):
        acvi_flags.write_flag_record(str(tmp_path), _parse("--context=sa"))
    assert json.loads(record.read_text()) == theirs


def test_the_flag_values_are_logged_at_verbosity_1_only(tmp_path, absl_caplog):
    acvi_flags.write_flag_record(str(tmp_path), _parse("--kl_weight=0.01"))
    assert "flags:" not in absl_caplog.text  # hparams.json holds them
    absl_caplog.set_level("DEBUG", logger="absl")  # --verbosity=1
    acvi_flags.write_flag_record(str(tmp_path), _parse("--kl_weight=0.01"))
    assert "flags: {" in absl_caplog.text and "'kl_weight': 0.01" in absl_caplog.text


def test_run_config_takes_the_record_under_the_given_flags(tmp_path, absl_caplog):
    # the run: non-default model flags, a decode setting, and a command's own flags
    run = _parse(
        "--context=sa",
        "--ved_latent_dim=7",
        "--seed=5",
        "--num_gpus=2",
        "--distribution_strategy=mirrored",
    )
    acvi_flags.write_flag_record(str(tmp_path), run)
    assert json.loads((tmp_path / "hparams.json").read_text())["distribution_strategy"] == (
        "mirrored"
    )
    config = acvi_flags.run_config(
        _parse("--seed=9", "--context=sa"), str(tmp_path), (), (), acvi_flags.define_flags
    )
    assert (config.context, config.ved_latent_dim) == ("sa", 7)  # the record's
    assert config.seed == 9  # given, not a model flag: the command line's
    # the shared command flags stay the command's: a resume of a mirrored run on one device
    assert (config.num_gpus, config.distribution_strategy) == (None, "default")
    assert config.given == {"seed", "context"}
    # a given model flag that contradicts the record is refused in one line
    with pytest.raises(
        acvi_flags.FlagChangeError,
        match=r"hparams.json: the run was trained with --ved_latent_dim=7, this command gives "
        r"--ved_latent_dim=8, which changes the model; leave --ved_latent_dim out",
    ):
        acvi_flags.run_config(
            _parse("--ved_latent_dim=8"), str(tmp_path), (), (), acvi_flags.define_flags
        )
    # an entry point's command flags are not taken from the record
    kept = acvi_flags.run_config(_parse(), str(tmp_path), (), ("seed",), acvi_flags.define_flags)
    assert (kept.seed, kept.ved_latent_dim) == (111, 7)
    # without a record: one warning, the command's flags
    absl_caplog.clear()
    alone = acvi_flags.run_config(
        _parse("--seed=3"), str(tmp_path / "old"), (), (), acvi_flags.define_flags
    )
    assert (alone.context, alone.seed) == ("acvi", 3)
    assert "hparams.json is missing" in absl_caplog.text


def test_a_record_another_host_wrote_is_refused_before_its_flags_are_compared(
    tmp_path,
):
    """A captioner's folder given to the summarizer (a resume, a decode, summarize) is
    named as another host's run, not refused for a flag or data it does not share."""
    path = tmp_path / "hparams.json"
    record = dict(encoder_units=8, num_frames=4)
    given = config_lib.parse(run_summarization.define_flags, ["x", "--vocab_size=2000"])

    def run_config(entry_point="pointer_generator.run_summarization"):
        define_flags = run_summarization.define_flags
        return acvi_flags.run_config(
            given, str(tmp_path), (), (), define_flags, entry_point=entry_point
        )

    for command in ("/a/video_caption/run_captioning.py --mode=train", "C:/b/run.py"):
        path.write_text(json.dumps(dict(record, _command=command)))
        if command.startswith("C:"):  # not a host's entry point (a test's run): no verdict
            run_config()
            continue
        with pytest.raises(acvi_flags.FlagChangeError) as refused:
            run_config()
        assert str(refused.value) == (
            "%s is the record of a video_caption.run_captioning run, not one of "
            "pointer_generator.run_summarization: the folder holds another host's run, which "
            "this command cannot use; give the folder of a pointer_generator.run_summarization "
            "run, or a new folder for a new run" % path
        )
        run_config(entry_point=None)  # a command of no host's (a test's start): no verdict
    # the entry point is the Task's, however the command started (python -m included)
    path.write_text(json.dumps(dict(record, _command="/a/nmt/run_nmt.py --src=en")))
    with pytest.raises(acvi_flags.FlagChangeError, match="record of a nmt.run_nmt run, not"):
        runner.recorded_config(pg_task.TASK, str(tmp_path))
    # a run the generic command trained names its writer in the record, not its command
    generic = "/a/acvi_tf/runner/__main__.py --task=translation --command=run"
    path.write_text(json.dumps(dict(record, _command=generic, _entry_point="nmt.run_nmt")))
    with pytest.raises(acvi_flags.FlagChangeError, match="record of a nmt.run_nmt run, not"):
        run_config()
    # and its own runs are its own
    own = "/a/pointer_generator/run_summarization.py --mode=train"
    path.write_text(json.dumps(dict(_command=own, hidden_dim=8)))
    config = run_config()
    assert config.hidden_dim == 8


def test_a_record_value_of_the_wrong_kind_is_one_error_naming_it(tmp_path):
    """A hand-edited record: an integer flag refuses a string or a fraction, a float flag
    takes a whole number, a string flag refuses a number; each error names the file."""
    acvi_flags.write_flag_record(str(tmp_path), _parse("--ved_latent_dim=7"))
    path = tmp_path / "hparams.json"
    record = json.loads(path.read_text())
    for name, value, what in (
        ("ved_latent_dim", "sixteen", "a whole number"),
        ("ved_latent_dim", 16.5, "a whole number"),
        ("ved_latent_dim", True, "a whole number"),
        ("ved_latent_dim", None, "a whole number"),
        ("context", 3, "a string"),
        ("kl_free_bits", "0.5", "a number"),
    ):
        path.write_text(json.dumps(dict(record, **{name: value})))
        with pytest.raises(files.RecordError) as e:
            acvi_flags.run_config(_parse(), str(tmp_path), (), (), acvi_flags.define_flags)
        assert str(e.value) == (
            "%s: --%s is %s there, not %s as the flag takes; write the value the run trained "
            "with, or delete the record and give the run's model flags on the command line"
            % (path, name, json.dumps(value), what)
        )
    # the same where the command line repeats the model flag (a resume of its command)
    path.write_text(json.dumps(dict(record, ved_latent_dim="sixteen")))
    given = _parse("--ved_latent_dim=16")
    for check in (
        lambda: acvi_flags.run_config(given, str(tmp_path), (), (), acvi_flags.define_flags),
        lambda: acvi_flags.compare_flag_record(str(tmp_path), given, ()),
    ):
        with pytest.raises(files.RecordError, match='--ved_latent_dim is "sixteen" there, not a'):
            check()
    path.write_text(json.dumps(dict(record, kl_free_bits=1)))
    taken = acvi_flags.run_config(
        _parse(), str(tmp_path), (), (), acvi_flags.define_flags
    ).kl_free_bits
    assert taken == 1.0 and isinstance(taken, float)
    # a value of the right kind that its flag refuses, as a command line's would be
    path.write_text(json.dumps(dict(record, ved_latent_dim=-3)))
    with pytest.raises(files.RecordError) as e:
        acvi_flags.run_config(_parse(), str(tmp_path), (), (), acvi_flags.define_flags)
    assert str(e.value) == (
        "%s holds a value its flag refuses (flag --ved_latent_dim=-3: -3 is not a positive "
        "integer); put the value the run trained with back there" % path
    )
    # and a choice its flag does not offer (it would be refused on a command line)
    path.write_text(json.dumps(dict(record, context="acvii")))
    with pytest.raises(files.RecordError) as e:
        acvi_flags.run_config(_parse(), str(tmp_path), (), (), acvi_flags.define_flags)
    assert str(e.value).startswith(
        "%s holds a value its flag refuses (flag --context=acvii: value should be one of <" % path
    )
    # a run recorded before --mixed_precision took a precision holds a boolean
    path.write_text(json.dumps(dict(record, mixed_precision=True)))
    assert (
        acvi_flags.run_config(
            _parse(), str(tmp_path), (), (), acvi_flags.define_flags
        ).mixed_precision
        is True
    )


def test_each_recorded_choice_of_a_list_flag_is_checked(tmp_path):
    """The captioner's ``--metrics`` in its record: a list of choices, each checked."""

    def run_config(metrics):
        argv = ["x", "--out_dir=%s" % tmp_path, "--data_dir=d", "--features=f"]
        acvi_flags.write_flag_record(
            str(tmp_path), config_lib.parse(run_captioning.define_flags, argv)
        )
        path = tmp_path / "hparams.json"
        path.write_text(json.dumps(dict(json.loads(path.read_text()), metrics=metrics)))
        config = config_lib.parse(run_captioning.define_flags, argv[:2])
        return acvi_flags.run_config(config, str(tmp_path), (), (), run_captioning.define_flags)

    assert run_config(["ROUGE_L", "CIDEr"]).metrics == ("ROUGE_L", "CIDEr")
    with pytest.raises(files.RecordError, match=r"\(flag --metrics=Bleu_9: value should be one"):
        run_config(["ROUGE_L", "Bleu_9"])


@settings(max_examples=60, deadline=None)
@given(
    values=st.dictionaries(
        st.sampled_from(
            [
                "kl_weight",
                "kl_free_bits",
                "acvi_gumbel_fraction",
                "acvi_gumbel_temperature",
                "acvi_log_var_min",
                "acvi_log_var_max",
                "structured_lambda",
                "kl_anneal_steps",
                "acvi_num_samples",
                "ved_latent_dim",
            ]
        ),
        st.one_of(
            st.sampled_from(["nan", "inf", "-inf", "1e400", "-0", "", "x", "1,2", "0x10"]),
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
            st.integers(-(10**20), 10**20).map(str),
        ),
        max_size=4,
    )
)
def test_any_flag_value_parses_to_a_usable_one_or_one_flag_error(values):
    """Fuzz: values of the numeric shared flags either parse into finite numbers that
    build a context layer, or are refused by absl with the flag named."""
    argv = ["--%s=%s" % item for item in values.items()]
    try:
        fv = _parse(*argv)
    except flags.Error as e:
        assert any(name in str(e) for name in values), e
        return
    for name in values:
        assert math.isfinite(fv[name]), name
    try:
        builders.context_layer(fv)
    except ValueError as e:  # a combination the layer refuses, said in its own words
        assert str(e)


def test_a_flag_of_several_values_takes_them_comma_separated_or_repeated():
    for argv in (["--metrics=Bleu_4,CIDEr"], ["--metrics=Bleu_4", "--metrics=CIDEr"]):
        parsed = config_lib.parse(run_captioning.define_flags, ["x", *argv])
        assert parsed.metrics == ("Bleu_4", "CIDEr"), argv
    default = config_lib.parse(run_captioning.define_flags, ["x"]).metrics
    assert default == tuple(vc_experiment.REPORTED)
    with pytest.raises(flags.IllegalFlagValueError, match="--metrics=cider: value should be"):
        config_lib.parse(run_captioning.define_flags, ["x", "--metrics=Bleu_4,cider"])


def test_a_resume_on_other_training_data_is_refused_unless_allowed(tmp_path, absl_caplog):
    data = [tmp_path / "train.en", tmp_path / "train.de"]
    for path in data:
        path.write_text("the %s side\n" % path.suffix)
    run = tmp_path / "run"
    acvi_flags.write_flag_record(str(run), _parse(), training_data=[str(p) for p in data])
    record = (run / "hparams.json").read_text()
    hashes = {str(p): files.sha256(str(p)) for p in data}
    assert json.loads(record)[acvi_flags.TRAINING_DATA] == hashes
    # the same content moved elsewhere: the same data
    moved = tmp_path / "moved.en"
    moved.write_text(data[0].read_text())
    same = {str(moved): hashes[str(data[0])], str(data[1]): hashes[str(data[1])]}
    acvi_flags.check_training_data(str(run), same)
    data[1].write_text("edited\n")
    edited = {str(p): files.sha256(str(p)) for p in data}
    with pytest.raises(acvi_flags.DataChangeError) as refused:
        acvi_flags.write_flag_record(
            str(run), _parse(), resume_model_flags=(), training_data=[str(p) for p in data]
        )
    assert str(refused.value) == (
        "%s: %s (sha256 %s...) is none of the 2 file(s) the run trained on; give the data the "
        "run trained on, or --allow_data_change to go on with this"
        % (run / "hparams.json", data[1], edited[str(data[1])][:12])
    )
    assert (run / "hparams.json").read_text() == record
    with pytest.raises(acvi_flags.DataChangeError, match="which this command leaves out"):
        acvi_flags.check_training_data(str(run), {str(data[0]): edited[str(data[0])]})
    acvi_flags.write_flag_record(
        str(run),
        _parse("--allow_data_change"),
        resume_model_flags=(),
        training_data=[str(p) for p in data],
    )
    assert "training on it (--allow_data_change)" in absl_caplog.text
    recorded = json.loads((run / "hparams.json").read_text())
    assert "allow_data_change" not in recorded  # a permission of that command only
    assert recorded[acvi_flags.TRAINING_DATA] == edited  # what a resume is checked against
    assert recorded[acvi_flags.EARLIER_TRAINING_DATA] == [hashes]  # and what it trained on
    # a resume on the new data keeps the history; another change adds to it
    acvi_flags.write_flag_record(
        str(run), _parse(), resume_model_flags=(), training_data=[str(p) for p in data]
    )
    assert json.loads((run / "hparams.json").read_text())[acvi_flags.EARLIER_TRAINING_DATA] == [
        hashes
    ]
    data[0].write_text("edited too\n")
    acvi_flags.write_flag_record(
        str(run),
        _parse("--allow_data_change"),
        resume_model_flags=(),
        training_data=[str(p) for p in data],
    )
    assert json.loads((run / "hparams.json").read_text())[acvi_flags.EARLIER_TRAINING_DATA] == [
        hashes,
        edited,
    ]


def test_a_resume_logs_the_changed_settings_not_the_commands_own_flags(tmp_path, absl_caplog):
    acvi_flags.write_flag_record(str(tmp_path), _parse("--seed=5"))
    absl_caplog.clear()
    resumed = _parse("--seed=6", "--allow_data_change", "--num_gpus=0")
    acvi_flags.write_flag_record(str(tmp_path), resumed, resume_model_flags=(), command_flags=())
    changes = [m for m in absl_caplog.messages if m.startswith("Continuing the run")]
    assert changes == ["Continuing the run with changed flags: --seed 5 -> 6"]
    absl_caplog.clear()  # an entry point's own command flag: no line either
    again = _parse("--seed=7")
    acvi_flags.write_flag_record(
        str(tmp_path), again, resume_model_flags=(), command_flags=["seed"]
    )
    assert not [m for m in absl_caplog.messages if m.startswith("Continuing the run")]


def test_a_record_of_an_earlier_version_holding_a_command_s_permission_is_this_command_s(
    tmp_path,
):
    acvi_flags.write_flag_record(str(tmp_path), _parse())
    record = json.loads((tmp_path / "hparams.json").read_text())
    (tmp_path / "hparams.json").write_text(json.dumps(dict(record, allow_data_change=True)))
    acvi_flags.write_flag_record(str(tmp_path), _parse())  # not another command's run
    assert "allow_data_change" not in json.loads((tmp_path / "hparams.json").read_text())
    (tmp_path / "hparams.json").write_text(json.dumps(dict(record, beam_size=4)))
    with pytest.raises(acvi_flags.FlagChangeError, match="records the flags --beam_size"):
        acvi_flags.write_flag_record(str(tmp_path), _parse())
