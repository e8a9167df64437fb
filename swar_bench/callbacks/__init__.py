"""Lightning callbacks: answer-kind accuracy, calibration, the length curriculum, the training
FLOP budget, and MQAR's accuracy per query gap.

They consume what the TBPTT module's evaluation steps return, :class:`swar_bench.module.EvalOutputs`
(the supervised positions of a batch: ``pred``, ``target``, ``loss``, ``confidence``,
``answer_kind``, ``key_age``, ``row``, with ``n_writes``), and report per ``n_writes`` x answer
kind; the curriculum picks the training N.
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
from swar_bench.callbacks.mqar_accuracy import MQARAccuracy, MQARCounts

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
    "MQARAccuracy",
    "MQARCounts",
    "accuracy_csv",
    "accuracy_table",
    "calibration_table",
    "self_knowledge_correlation",
]
