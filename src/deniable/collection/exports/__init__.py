"""What leaves the store and comes back: deniable's own exports (CSV, Parquet, SPSS,
Stata) and their R bundle, the files that put a survey into other survey tools
(``deniable embed``), and the reading of those tools' exports.

The names load on first use (PEP 562), so the command line reads the export formats
(``_formats``, declared once) without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._extras import lazy_attributes

if TYPE_CHECKING:
    from ._embed import EMBED_HOSTS, embed
    from ._export import EXPORT_FORMATS, export_bytes, read_export, sidecar_path, survey_file
    from ._export import GROUP_SUFFIX as GROUP_SUFFIX
    from ._export import export_definition as export_definition
    from ._export import not_exported as not_exported
    from ._export import wide_frame as wide_frame
    from ._formats import CLI_FORMATS as CLI_FORMATS
    from ._formats import FORMATS as FORMATS
    from ._formats import FormatName as FormatName
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

_HOME = {
    "GROUP_SUFFIX": "_export",
    "wide_frame": "_export",
    "not_exported": "_export",
    "export_definition": "_export",
    "CLI_FORMATS": "_formats",
    "FORMATS": "_formats",
    "FormatName": "_formats",
    "EMBED_HOSTS": "_embed",
    "embed": "_embed",
    "EXPORT_FORMATS": "_export",
    "export_bytes": "_export",
    "read_export": "_export",
    "sidecar_path": "_export",
    "survey_file": "_export",
    "HostExport": "_hosts",
    "read_host_export": "_hosts",
    "r_script": "_rscript",
}

__getattr__ = lazy_attributes(__name__, _HOME)


def __dir__() -> list[str]:
    return sorted(__all__)
