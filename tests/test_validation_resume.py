"""A validation is part of the step it belongs to: a run killed anywhere in the
save-then-validate sequence of a step (after the checkpoint, while scoring, after scoring
but before the best model's copy, after the copy but before ``best.json``'s record) runs
that validation first when it resumes, also when it had reached its last step, so the
best model, ``best.json`` and early stopping end as in a run never killed. A kill is an
exception raised from the function it interrupts (NMT's run in process too); once, the
captioner's command is SIGKILLed."""

import json
import os
import signal
import subprocess

import pytest
import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.training import checkpoints, trainer
from nmt import jobs as nmt_jobs
from nmt import run_nmt
from video_caption import jobs as vc_jobs
from video_caption import run_captioning

from conftest import python_m, write_clip_features

# The validation score of the model at each step (the toy model's weight is its step):
# the best is at 4, and 6 brings none, which ends a run of patience 1 there.
SCORES = {2: 1.0, 4: 3.0, 6: 2.0, 8: 4.0}
KILL_POINTS = ("after the save", "during scoring", "before the copy", "before the record")


class Killed(Exception):
    """Stands for a SIGKILL at one point of a step."""


def _kill(monkeypatch, point, at, step):
    """Makes the run raise ``Killed`` at ``point`` of step ``at``'s save-then-validate
    sequence (``"during scoring"`` is the validation's own, see ``_launch``)."""
    save, save_best = checkpoints.Checkpointer.save, checkpoints.Checkpointer.save_best
    write = files.atomic_write_text

    def saved(self):
        path = save(self)
        if point == "after the save" and int(step) == at:
            raise Killed(point)
        return path

    def before_copy(self, *args, **kwargs):
        if point == "before the copy" and int(step) == at:
            raise Killed(point)
        return save_best(self, *args, **kwargs)

    def before_record(path, text):
        if point == "before the record" and int(step) == at and path.endswith("best.json"):
            raise Killed(point)
        write(path, text)

    monkeypatch.setattr(checkpoints.Checkpointer, "save", saved)
    monkeypatch.setattr(checkpoints.Checkpointer, "save_best", before_copy)
    monkeypatch.setattr(files, "atomic_write_text", before_record)


def _launch(folder, validated, kill=None, total=8, patience=1):
    """One launch of a toy run (a weight that counts the steps) in ``folder``: restore,
    validate every 2 steps (appending each step scored to ``validated``), train to
    ``total``; ``kill``: ``(point, step)``. Returns the step it ends at."""
    step = tf.Variable(0, dtype=tf.int64)
    weight = tf.Variable(0.0)
    checkpointer = checkpoints.Checkpointer(
        str(folder / "train"),
        step,
        max_to_keep=10,
        best_dir=str(folder / "best"),
        model=tf.train.Checkpoint(weight=weight),
    )
    checkpointer.restore_latest()

    def validate(at):
        if kill == ("during scoring", at):
            raise Killed(kill[0])
        validated.append(at)
        return SCORES[int(weight)], {"weight": float(weight)}

    def train_step(batch, use_gumbel, at):
        weight.assign_add(1.0)
        return {"loss": tf.constant(0.5)}

    with pytest.MonkeyPatch.context() as patch:
        if kill:
            _kill(patch, *kill, step)
        with trainer.Trainer(
            checkpointer,
            total,
            tokens_key=None,
            validate=validate,
            validate_every=2,
            patience=patience,
        ) as loop:
            loop.train(({} for _ in range(100)), train_step)
    return int(step)


def _outcome(folder, final):
    """``(final step, best.json, (best model's name, its weight))`` of a run."""
    with open(folder / "best" / "best.json", encoding="utf-8") as f:
        record = json.load(f)
    path = tf.train.latest_checkpoint(str(folder / "best"))
    weight = tf.train.load_checkpoint(path).get_tensor("model/weight/.ATTRIBUTES/VARIABLE_VALUE")
    return final, record, (os.path.basename(path), float(weight))


@pytest.fixture(scope="module")
def never_killed(tmp_path_factory):
    """The outcome of the run without a kill."""
    folder = tmp_path_factory.mktemp("never_killed")
    validated = []
    outcome = _outcome(folder, _launch(folder, validated))
    assert outcome[0] == 6 and validated == [2, 4, 6]  # patience ends it at 6
    return outcome


@pytest.mark.parametrize("at", [4, 6])  # the new best; the validation that stops the run
@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_kill_in_a_steps_validation_is_made_good_on_resume(point, at, never_killed, tmp_path):
    validated = []
    with pytest.raises(Killed):
        _launch(tmp_path, validated, kill=(point, at))
    assert tf.train.latest_checkpoint(str(tmp_path / "train")).endswith("ckpt-%d" % at)
    assert _recorded(tmp_path / "best") < at
    before = len(validated)
    assert _outcome(tmp_path, _launch(tmp_path, validated)) == never_killed
    assert validated[before] == at  # the resume's first act
    assert sorted(set(validated)) == [2, 4, 6]


def _recorded(best_dir):
    """The last validation the ``best.json`` of ``best_dir`` records (0: none)."""
    record = best_dir / "best.json"
    return json.loads(record.read_text())["last_validated"] if record.exists() else 0


def test_a_kill_in_the_last_steps_validation_is_made_good_by_a_rerun(tmp_path):
    validated = []
    with pytest.raises(Killed):
        _launch(tmp_path, validated, kill=("after the save", 6), total=6, patience=0)
    assert _launch(tmp_path, validated, total=6, patience=0) == 6
    assert validated == [2, 4, 6] and _recorded(tmp_path / "best") == 6
    assert _launch(tmp_path, validated, total=6, patience=0) == 6  # nothing left to do
    assert validated == [2, 4, 6]


def test_a_kill_in_the_resumed_validation_is_made_good_by_the_next(never_killed, tmp_path):
    validated, errors = [], []
    for _ in range(2):  # the second kill is in the resume's validation, on entry
        with pytest.raises(Killed) as error:
            _launch(tmp_path, validated, kill=("during scoring", 4))
        errors.append(error)  # its frames, the trainer's among them, stay: the lock must not
    assert validated == [2]
    assert _outcome(tmp_path, _launch(tmp_path, validated)) == never_killed


def test_a_record_without_last_validated_counts_its_best_step(tmp_path):
    validated = []
    assert _launch(tmp_path, validated, total=4, patience=0) == 4  # best at 4
    record = tmp_path / "best" / "best.json"
    earlier = {k: v for k, v in json.loads(record.read_text()).items() if k != "last_validated"}
    record.write_text(json.dumps(earlier))
    assert _launch(tmp_path, validated, total=4, patience=0) == 4
    assert validated == [2, 4]


def test_a_recorded_validation_counts_once_after_a_fallback(tmp_path):
    """An unreadable newest checkpoint sends the resume back to the one before; the steps
    it trains again do not validate again, so early stopping counts each step once."""
    validated = []
    assert _launch(tmp_path, validated, total=6, patience=0) == 6
    record = (tmp_path / "best" / "best.json").read_text()
    data = tmp_path / "train" / "ckpt-6.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:10])
    assert _launch(tmp_path, validated, total=6, patience=0) == 6  # from ckpt-4
    assert validated == [2, 4, 6] and (tmp_path / "best" / "best.json").read_text() == record


def _steps(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["step"] for line in f]


def test_validation_jsonl_keeps_one_line_per_step(tmp_path):
    path = tmp_path / "validation.jsonl"
    lines = [{"CIDEr": 0.1, "step": 2}, {"CIDEr": 0.2, "step": 4}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"CIDEr": 0.3, "st')
    vc_jobs.record_validation(str(path), {"CIDEr": 0.25}, 4)  # 4 again; a cut line
    assert path.read_text().splitlines() == [
        json.dumps(lines[0]),
        json.dumps(lines[1] | {"CIDEr": 0.25}),
    ]


def _nmt_corpus(root):
    """The first 32 training and 4 dev pairs of the shipped En-De sample."""
    sample = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep", "samples")
    for name, count in (("train", 32), ("dev", 4), ("vocab", None)):
        for lang in ("en", "de"):
            with open(os.path.join(sample, "debian_en_de", "%s.%s" % (name, lang))) as f:
                lines = f.readlines()[:count]
            (root / ("%s.%s" % (name, lang))).write_text("".join(lines), encoding="utf-8")


@pytest.mark.eager
def test_nmt_validates_the_last_step_a_kill_left_out(tmp_path, monkeypatch):
    _nmt_corpus(tmp_path)
    out = tmp_path / "out"
    argv = ["run_nmt", "--src=en", "--tgt=de", "--out_dir=%s" % out, "--num_units=8"]
    argv += ["--%s_prefix=%s" % (name, tmp_path / name) for name in ("vocab", "train", "dev")]
    argv += ["--batch_size=16", "--num_train_steps=2", "--steps_per_external_eval=2"]
    config = config_lib.parse(run_nmt.define_flags, argv)

    def killed(*args):  # right after Saved translate.ckpt-2
        raise Killed("scoring")

    with monkeypatch.context() as patch:
        patch.setattr(nmt_jobs, "evaluate_split", killed)
        with pytest.raises(Killed):
            run_nmt.run(config)
    assert tf.train.latest_checkpoint(str(out)).endswith("ckpt-2")
    assert not (out / "best").exists()
    run_nmt.run(config)  # at the last step: validates it, and stops
    assert _recorded(out / "best") == 2
    assert tf.train.latest_checkpoint(str(out / "best")).endswith("ckpt-2")


@pytest.mark.slow  # a launch of the command
def test_a_captioner_sigkilled_after_its_save_validates_on_rerun(tmp_path, absl_caplog):
    """The command as a user runs it, SIGKILLed right after ``Saved .../ckpt-2``; the
    same command again (in this process: what it resumes is on disk)."""
    data_dir, features = write_clip_features(tmp_path)
    out = tmp_path / "run"
    argv = ["--data_dir=" + data_dir, "--features=" + features, "--out_dir=%s" % out]
    argv += ["--encoder_units=4", "--decoder_units=4", "--batch_size=4", "--metrics=ROUGE_L"]
    argv += ["--best_metric=ROUGE_L", "--valid_every=2", "--max_steps=2"]
    command = python_m("video_caption.run_captioning", *argv, eager=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    process = subprocess.Popen(command, cwd=root, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "Saved %s" % (out / "train" / "ckpt-2") in line:
            process.kill()
            break
    process.wait()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL, "".join(lines)
    assert not (out / "validation.jsonl").exists() and not (out / "best").exists()
    run_captioning.run(config_lib.parse(run_captioning.define_flags, ["rerun", *argv]))
    assert "Validating step 2, which the run had not recorded" in absl_caplog.text
    assert _steps(out / "validation.jsonl") == [2] and _recorded(out / "best") == 2
