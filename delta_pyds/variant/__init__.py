"""The variant type: the binary encoding (:mod:`~delta_pyds.variant.encoding`), shredded
Parquet layouts rebuilt as the Arrow form Spark expects (:mod:`~delta_pyds.variant.shredding`)
and JSON rendering (:mod:`~delta_pyds.variant.json`).

The user-facing names are re-exported here; code inside the package imports them from
the defining module.
"""

from delta_pyds.errors import MalformedVariantError
from delta_pyds.variant.json import decode_to_json
from delta_pyds.variant.shredding import (
    VARIANT_ARROW_TYPE,
    is_variant_type,
    reconstruct_nested,
    reconstruct_variant,
)

__all__ = [
    "VARIANT_ARROW_TYPE",
    "MalformedVariantError",
    "decode_to_json",
    "is_variant_type",
    "reconstruct_nested",
    "reconstruct_variant",
]
