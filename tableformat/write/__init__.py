"""The write wing: inserts, row operations, the rolling rowset writer, alter, and the write's
result. It imports the log, read and format wings."""
