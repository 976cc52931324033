"""The summarizer's curriculum: Table 5, --phases and where a resumed step is
(pointer_generator.curriculum)."""

import pytest

from pointer_generator import curriculum


def test_paper_phases_are_table_5_plus_coverage():
    phases = curriculum.parse_phases("paper", coverage_steps=3000)
    assert [(p.start, p.end, p.max_enc_steps, p.max_dec_steps, p.coverage) for p in phases] == [
        (0, 71000, 10, 10, False),
        (71000, 116000, 50, 50, False),
        (116000, 184000, 100, 50, False),
        (184000, 223000, 200, 50, False),
        (223000, 250000, 400, 100, False),
        (250000, 253000, 400, 100, True),
    ]
    assert curriculum.parse_phases("paper")[-1].end == 250000


@pytest.mark.parametrize(
    "spec, match",
    [
        ("5-10:10:10", "must start at 0"),
        ("0-10:10:10,12-20:50:50", "must start at 10"),
        ("0-10:10:10,10-10:50:50", "ends before it starts"),
        ("0-10:0:10", "non-positive"),
        ("0-10:10", "not start-end:max_enc:max_dec"),
        ("zero-ten:1:1", "not start-end:max_enc:max_dec"),
    ],
)
def test_bad_phase_lists_are_rejected(spec, match):
    with pytest.raises(curriculum.PhaseError, match=match):
        curriculum.parse_phases(spec)


def test_phase_at_finds_the_phase_of_a_resumed_step():
    phases = curriculum.parse_phases("0-10:5:5,10-20:8:8", coverage_steps=5)
    assert curriculum.phase_at(phases, 0).max_enc_steps == 5
    assert curriculum.phase_at(phases, 9).max_enc_steps == 5
    assert curriculum.phase_at(phases, 10).max_enc_steps == 8
    assert curriculum.phase_at(phases, 20).coverage
    assert curriculum.phase_at(phases, 99).coverage


def test_training_ends_at_max_steps_or_the_curriculum_s_end_and_says_so(absl_caplog):
    phases = curriculum.parse_phases("0-8:20:6,8-16:30:8", coverage_steps=6)
    assert curriculum.training_end(phases, 0) == 22
    assert curriculum.training_end(phases, 10, warn=True) == 10
    assert not absl_caplog.records
    assert curriculum.training_end(phases, 45) == 22 and not absl_caplog.records
    assert curriculum.training_end(phases, 45, warn=True) == 22
    [record] = absl_caplog.records
    assert record.levelname == "WARNING" and record.getMessage().startswith(
        "--max_steps=45 is past the end of the curriculum (--phases, then --coverage_steps) "
        "at step 22: training stops there"
    )
