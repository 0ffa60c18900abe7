"""The README's feature-support table says exactly what the code's feature table says."""

import os
import re

from delta_pyds.protocol.features import FEATURES


def test_readme_feature_table_matches_code():
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    block = readme.split("<!-- features:start")[1].split("<!-- features:end -->")[0]
    rows = re.findall(r"^\| `([^`]+)` \| (yes|refused) \| (yes|refused) \|$", block, re.M)
    documented = {name: (read == "yes", write == "yes") for name, read, write in rows}
    assert documented == {f.name: (f.read, f.write) for f in FEATURES.values()}


import json  # noqa: E402

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

from delta_pyds.errors import UnsupportedFeatureError  # noqa: E402
from delta_pyds.table.snapshot import Snapshot  # noqa: E402
from delta_pyds.write.plan import commit_arrow  # noqa: E402


def _table_with_feature(path, feature):
    f = FEATURES[feature]
    protocol = {
        "minReaderVersion": 3 if f.reader else 1,
        "minWriterVersion": 7,
        "writerFeatures": sorted(
            {feature, "domainMetadata"} if feature in ("rowTracking", "clustering") else {feature}
        ),
    }
    if f.reader:
        protocol["readerFeatures"] = [feature]
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    os.makedirs(os.path.join(path, "_delta_log"))
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json"), "w") as out:
        out.write(json.dumps({"protocol": protocol}) + "\n")
        out.write(
            json.dumps(
                {
                    "metaData": {
                        "id": "t",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema),
                        "partitionColumns": [],
                        "configuration": {},
                        "createdTime": 1,
                    }
                }
            )
            + "\n"
        )


@pytest.mark.parametrize("feature", list(FEATURES))
def test_every_feature_is_read_and_written_as_the_table_says(tmp_path, feature):
    """A table whose protocol lists the feature: reads and writes succeed exactly when the
    feature table says so, and are otherwise refused naming the feature."""
    f = FEATURES[feature]
    path = str(tmp_path / "t")
    _table_with_feature(path, feature)
    if not f.read:
        with pytest.raises(UnsupportedFeatureError, match=feature):
            Snapshot.load(path)
        return
    assert Snapshot.load(path).version == 0
    if not f.write:
        with pytest.raises(UnsupportedFeatureError, match=feature):
            commit_arrow(path, pa.table({"id": [1]}))
        assert Snapshot.load(path).version == 0
        return
    commit_arrow(path, pa.table({"id": [1, 2]}))
    snap = Snapshot.load(path)
    assert snap.version == 1 and snap.num_files == 1
    from delta_pyds.protocol.schema_evolution import logical_arrow_schema
    from delta_pyds.read.file_reader import ReadSpec, read_file
    from delta_pyds.read.scan import FileTask

    spec = ReadSpec(
        storage=snap.storage, output=snap.schema, arrow_schema=logical_arrow_schema(snap.schema), partition_columns=()
    )
    f0 = snap.files.to_pylist()[0]
    rows = [
        r for b in read_file(spec, FileTask(f0["path"], f0["size"], (), f0["deletion_vector"])) for r in b.to_pylist()
    ]
    assert rows == [{"id": 1}, {"id": 2}]
