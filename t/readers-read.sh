#!/bin/sh
# readers-read.sh - stores that zarr-python 3 and TensorStore write, sharded
# and not, pass `shardpipe verify`, and `shardpipe cat` returns the values
# they were given; a codec shardpipe lacks is refused by name.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_read.py numpy zarr tensorstore
