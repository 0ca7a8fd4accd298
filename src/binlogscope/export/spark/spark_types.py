"""The Spark SQL type of an export column type: one mapping for every Spark path (the data
source's schema, ``export --spark``'s task schema, ``analyze``'s views). Its own module so the
data source and ``analyze`` (which registers the data source) need not import each other."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def spark_type(t: pa.DataType) -> Any:
    """The Spark SQL type of an export column type."""
    from pyspark.sql import types as st

    if pa.types.is_map(t):
        return st.MapType(spark_type(t.key_type), spark_type(t.item_type), True)
    if pa.types.is_list(t):
        return st.ArrayType(spark_type(t.value_type), True)
    if pa.types.is_struct(t):
        return st.StructType([st.StructField(f.name, spark_type(f.type), True) for f in t])
    if pa.types.is_timestamp(t):
        return st.TimestampType()
    simple = {
        pa.string(): st.StringType(), pa.int16(): st.ShortType(), pa.int32(): st.IntegerType(),
        pa.int64(): st.LongType(), pa.bool_(): st.BooleanType(), pa.binary(): st.BinaryType(),
        pa.float64(): st.DoubleType(), pa.int8(): st.ByteType(),
    }
    try:
        return simple[t]
    except KeyError:
        raise TypeError(f"no Spark type for {t}") from None
