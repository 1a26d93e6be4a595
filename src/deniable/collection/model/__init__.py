"""The survey model: a survey file's questions, designs, arms, groups, panels and
translations, its privacy budget, and the respondent's view of it (what the page and
the clients draw from). Pure Python over the library's mechanisms; no database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._extras import lazy_attributes, require

require("pydantic", "server")  # a core-only install: one line naming the extra
require("yaml", "server")

from ._arms import Arm  # noqa: E402
from ._fields import Panel  # noqa: E402
from ._groups import GROUP_DESIGNS as GROUP_DESIGNS  # noqa: E402
from ._i18n import LANGUAGES  # noqa: E402
from ._i18n import catalog as catalog  # noqa: E402
from ._i18n import choose_language as choose_language  # noqa: E402
from ._meaning import design_digest as design_digest  # noqa: E402
from ._meaning import designs_digest as designs_digest  # noqa: E402
from ._questions import Question  # noqa: E402
from ._survey import MIN_RELEASE as MIN_RELEASE  # noqa: E402
from ._survey import SLUG_PATTERN as SLUG_PATTERN  # noqa: E402
from ._survey import SMALL_RELEASE as SMALL_RELEASE  # noqa: E402
from ._survey import Survey, load_survey, parse_survey  # noqa: E402
from ._survey_designs import SURVEY_DESIGNS as SURVEY_DESIGNS  # noqa: E402
from ._survey_designs import survey_design as survey_design  # noqa: E402

__all__ = [
    "LANGUAGES",
    "Arm",
    "Panel",
    "Question",
    "Survey",
    "load_survey",
    "parse_survey",
]


# Internal names other rooms import, loaded on first use (PEP 562; not in __all__).
if TYPE_CHECKING:
    from ._budget import Ledger as Ledger
    from ._budget import check_lifetime as check_lifetime
    from ._budget import lifetime_ledger as lifetime_ledger
    from ._budget import variants_digest as variants_digest
    from ._budget import wave_charge as wave_charge

_INTERNAL = {
    "Ledger": "_budget",
    "check_lifetime": "_budget",
    "lifetime_ledger": "_budget",
    "variants_digest": "_budget",
    "wave_charge": "_budget",
}

__getattr__ = lazy_attributes(__name__, _INTERNAL)
