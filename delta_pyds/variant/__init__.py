"""The variant type: decoding the binary encoding, shredded layouts and JSON rendering into
the Arrow form Spark expects."""
