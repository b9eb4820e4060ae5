#!/usr/bin/env python3
"""Rewrites an rlmon snapshot with another Parquet writer (pyarrow), its rows in the
same order and its `rlmon` metadata kept, in row groups of ROWS rows cut by count
(inside steps, as any writer's row_group_size does): the "large row groups from
another writer" case of replay, compare and export.

    .venv/bin/python scripts/rewrite-row-groups.py SNAPSHOT OUT ROWS
e.g. .venv/bin/python scripts/rewrite-row-groups.py s.rlmon.parquet s-2m.parquet 2000000
Needs pyarrow (scripts/setup.sh installs it into .venv).
"""
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reader = pq.ParquetFile(src)
    # The file's key-value metadata (`rlmon`) goes on the schema, which pyarrow
    # writes into the footer. Batches are gathered into tables of ROWS rows: one
    # write, one row group.
    meta = {k: v for k, v in (reader.metadata.metadata or {}).items() if k != b"ARROW:schema"}
    schema = reader.schema_arrow.with_metadata(meta)
    with pq.ParquetWriter(dst, schema, compression="zstd") as writer:
        pending, count = [], 0
        for batch in reader.iter_batches(batch_size=1 << 16):
            while batch.num_rows:
                take = min(batch.num_rows, rows - count)
                pending.append(batch.slice(0, take))
                batch, count = batch.slice(take), count + take
                if count == rows:
                    writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=rows)
                    pending, count = [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=rows)
    out = pq.ParquetFile(dst).metadata
    print(f"{dst}: {out.num_rows} rows in {out.num_row_groups} row groups")


if __name__ == "__main__":
    main()
