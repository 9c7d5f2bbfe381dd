"""The Spark side of tableformat: the data sources (the Python one and the JVM connector), the
distributed jobs (insert, merge, compaction, export, backfill) and the session that runs them."""
