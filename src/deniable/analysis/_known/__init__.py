"""Items whose prevalence is known: validation items checked against it
(``_known_prevalence``; Höglinger & Diekmann 2017) and the crosswise model's
zero-prevalence anchor that corrects for inattention (``_anchor``; Atsusaka &
Stevenson 2023)."""

from ._anchor import AnchorCorrection, AnchorRegressionResult, anchor_correction, anchor_regression
from ._known_prevalence import ValidationCheck, validation_check

__all__ = [
    "AnchorCorrection",
    "AnchorRegressionResult",
    "ValidationCheck",
    "anchor_correction",
    "anchor_regression",
    "validation_check",
]
