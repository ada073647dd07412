"""The local engine of ``rmqctl analyze stuck``: the Spark job's verdicts, computed in this process with pyarrow.

The Spark job (``analysis/``) is the reference and ships to clusters; this package answers the same question
on one machine without starting a JVM (input of more than a million rows is judged in buckets spilled to
disk, so memory stays bounded). It reads the same files
(the window's ``date=`` partitions, the same columns), names the same files left out with the same reasons,
applies the same rules in the same order and writes the same document: :mod:`rmqctl.localjob.files` (which
files, whole or not, read once), :mod:`rmqctl.localjob.verdicts` (snapshot rows to one verdict per queue and one
summary per group) and :mod:`rmqctl.localjob.job` (options, window, document, exit code). The agreement tests
under ``tests/analysis`` hold every verdict, reason and number to the Spark job's.

Imports pyarrow (the ``snapshot`` extra), the standard library, :mod:`rmqctl.stuck` and the clock; never pyspark, the
``analysis`` package or the CLI.
"""
