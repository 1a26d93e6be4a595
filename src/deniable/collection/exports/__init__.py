"""What leaves the store and comes back: deniable's own exports (CSV, Parquet, SPSS,
Stata) and their R bundle, the files that put a survey into other survey tools
(``deniable embed``), and the reading of those tools' exports."""

__all__: list[str] = []
