"""The interop wing: mirrors into other formats (Delta now), readers of our log and writers of
theirs (specs/format.md §15). It imports every wing below it."""
