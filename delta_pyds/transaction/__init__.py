"""Transactions: one atomic put-if-absent commit per change, conflict detection against
winning commits, retry, checkpoint writing and file-action helpers."""
