#!/bin/sh
# readers-fill.sh - zarr-python 3 and TensorStore read a non-zero fill value
# (NaN and infinities included) and return it where `shardpipe write` left
# chunks and shards out.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_fill.py numpy zarr tensorstore
