"""Bulk export of ledgers to files through Spark (on one machine by default, on a cluster when data outgrows it).

- :mod:`admin.export.plan`: which ledgers, and how they are cut into Spark partitions, from metadata only;
- :mod:`admin.export.source`: the ``bookkeeper`` data source (PySpark's Python Data Source API, Spark 4+);
- :mod:`admin.export.job`: the export on a Spark session (the write, its summary, verification of the files);
- :mod:`admin.export.session`: a Spark session whose console noise goes to a log file, and the progress of tasks.

``bkctl ledger export`` drives them; under ``spark-submit``, bkctl's ``__main__.py`` is the application.
"""
