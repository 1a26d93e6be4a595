"""What leaves the store and comes back: deniable's own exports (CSV, Parquet, SPSS,
Stata) and their R bundle, the files that put a survey into other survey tools
(``deniable embed``), and the reading of those tools' exports."""

from ._embed import (
    EMBED_HOSTS,
    embed,
)
from ._export import (
    EXPORT_FORMATS,
    GROUP_SUFFIX,
    MEDIA_TYPES,
    PARQUET_KEY,
    export_bytes,
    read_export,
    sidecar_path,
    survey_file,
    wide_frame,
)
from ._host_common import (
    MODULES,
    classic_bundle,
    question_data,
    questions_module,
    write_readme,
)
from ._host_forms import (
    otree_files,
    qualtrics_files,
)
from ._host_limesurvey import (
    limesurvey_files,
    limesurvey_lss,
)
from ._hosts import (
    HOSTS,
    MAX_EXPORT_BYTES,
    TRIAL_TYPE,
    HostExport,
    detect_host,
    read_host_export,
)
from ._rscript import (
    glmmrr_row,
    r_script,
    rrreg_call,
)

__all__ = [
    "EMBED_HOSTS",
    "EXPORT_FORMATS",
    "GROUP_SUFFIX",
    "HOSTS",
    "MAX_EXPORT_BYTES",
    "MEDIA_TYPES",
    "MODULES",
    "PARQUET_KEY",
    "TRIAL_TYPE",
    "HostExport",
    "classic_bundle",
    "detect_host",
    "embed",
    "export_bytes",
    "glmmrr_row",
    "limesurvey_files",
    "limesurvey_lss",
    "otree_files",
    "qualtrics_files",
    "question_data",
    "questions_module",
    "r_script",
    "read_export",
    "read_host_export",
    "rrreg_call",
    "sidecar_path",
    "survey_file",
    "wide_frame",
    "write_readme",
]
