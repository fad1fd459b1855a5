"""Building the code location: DataCoolie metadata -> Dagster ``Definitions``.

Everything a code-location load computes lives here: the typed ``configure.dagster`` settings,
destination tables and their lineage, asset specs (``translator``), partitions, the asset and
stage jobs whose bodies run the driver, asset checks, the materialization metadata they report
(``results``, ``catalog``, ``touched``), the resource and the ``dg`` component. ``factory``
assembles them; nothing here runs on its own schedule.
"""
