"""What leaves the store and comes back: deniable's own exports (CSV, Parquet, SPSS,
Stata) and their R bundle, the files that put a survey into other survey tools
(``deniable embed``), and the reading of those tools' exports."""

from ._embed import EMBED_HOSTS, embed
from ._export import EXPORT_FORMATS, export_bytes, read_export, sidecar_path, survey_file
from ._hosts import HostExport, read_host_export
from ._rscript import r_script

__all__ = [
    "EMBED_HOSTS",
    "EXPORT_FORMATS",
    "HostExport",
    "embed",
    "export_bytes",
    "r_script",
    "read_export",
    "read_host_export",
    "sidecar_path",
    "survey_file",
]
