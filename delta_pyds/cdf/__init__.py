"""The change data feed: which files of which versions hold which row changes, and reading
them into change rows."""
