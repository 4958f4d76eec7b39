"""``read_part`` decodes a part column by column into the documents ``from_row`` makes of its rows:
JSON fields, a null meta as ``{}``, columns that are no ``Document`` field left out."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from curation.document import Document
from pipelines.plumbing.parts import PART_SCHEMA, from_row, read_part, to_row


def test_read_part_equals_the_rows_decoded_one_by_one(tmp_path):
    docs = [Document(f"s/f:{i}", "books3", f"text {i} \u00e9\n", url=None if i % 2 else f"http://x/{i}",
                     meta={"pieces": [{"id": "a", "chars": i}]} if i % 3 else {}, lang="en",
                     lang_score=i / 10, tokens=i, heuristic_scores={"a": 0.5} if i % 4 else None,
                     pii_spans=[{"kind": "email", "start": 0, "end": 3}] if i == 5 else None)
            for i in range(700)]
    rows = [to_row(d) | {"meta": None if i == 7 else to_row(d)["meta"]} for i, d in enumerate(docs)]
    path = str(tmp_path / "part.parquet")
    schema = PART_SCHEMA.append(pa.field("extra", pa.int64()))  # a column of a later version
    pq.write_table(pa.Table.from_pylist([r | {"extra": 1} for r in rows], schema=schema), path,
                   row_group_size=300)
    got = list(read_part(path, batch_size=256))
    assert got == [from_row(r) for r in rows] and got[0] == docs[0] and got[7].meta == {}
    assert got[:7] == docs[:7] and got[8:] == docs[8:]
