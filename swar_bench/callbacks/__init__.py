"""Lightning callbacks: answer-type accuracy, calibration, the length curriculum and the training
FLOP budget.

They consume the evaluation step outputs of the TBPTT module (flattened supervised positions with
``pred``, ``target``, ``loss``, ``confidence``, ``answer_kind``, ``key_age``, ``row``,
``n_writes``) and report per ``n_writes`` x answer type; the curriculum picks the training N.
"""

from swar_bench.callbacks.answer_type_accuracy import (
    AGE_BIN_UPPER,
    KINDS,
    AccuracyReport,
    AnswerTypeAccuracy,
    AnswerTypeCounts,
    accuracy_csv,
    accuracy_table,
)
from swar_bench.callbacks.calibration import (
    Calibration,
    CalibrationCounts,
    CalibrationReport,
    calibration_table,
    self_knowledge_correlation,
)
from swar_bench.callbacks.flop_budget import FlopBudget
from swar_bench.callbacks.length_curriculum import LengthCurriculum

__all__ = [
    "AGE_BIN_UPPER",
    "KINDS",
    "AccuracyReport",
    "AnswerTypeAccuracy",
    "AnswerTypeCounts",
    "Calibration",
    "CalibrationCounts",
    "CalibrationReport",
    "FlopBudget",
    "LengthCurriculum",
    "accuracy_csv",
    "accuracy_table",
    "calibration_table",
    "self_knowledge_correlation",
]
