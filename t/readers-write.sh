#!/bin/sh
# readers-write.sh - zarr-python 3 and TensorStore read every store that
# `shardpipe write` makes (the matrix of t/python/matrix.py) and see the
# input's values, shape, dtype, fill value and dimension names.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_write.py numpy zarr tensorstore
