"""Reports as tables: pandas frames for CSV files (:mod:`~deniable.tables.frames`),
Arrow and Parquet read in bounded batches (:mod:`~deniable.tables.arrow`), and Spark
DataFrames tallied exactly on a cluster (:mod:`~deniable.tables.spark`).

Each mechanism gives its reports' columns (``report_fields``, ``report_arrays``,
``report_columns``); these modules read and write them. The modules load pandas,
pyarrow or PySpark only when imported (the ``analysis``, ``scale`` and ``spark``
extras).
"""

from __future__ import annotations

__all__: list[str] = []
