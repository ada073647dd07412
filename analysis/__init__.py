"""PySpark jobs over offset snapshots; they import only pyspark and the standard library."""
