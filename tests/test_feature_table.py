"""The README's feature-support table says exactly what the code's feature table says."""

import os
import re

from delta_pyds.features import FEATURES


def test_readme_feature_table_matches_code():
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    block = readme.split("<!-- features:start")[1].split("<!-- features:end -->")[0]
    rows = re.findall(r"^\| `([^`]+)` \| (yes|refused) \| (yes|refused) \|$", block, re.M)
    documented = {name: (read == "yes", write == "yes") for name, read, write in rows}
    assert documented == {f.name: (f.read, f.write) for f in FEATURES.values()}
