"""A table at one version: the snapshot readers use and the file state writers need."""
