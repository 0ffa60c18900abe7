"""The transaction log: file names, the log segment of a version, replay of file actions,
checkpoints, the commit-by-commit view, metadata cleanup, history and time travel."""
