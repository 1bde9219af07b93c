#!/bin/sh
# readers-attrs.sh - zarr-python 3 and TensorStore read the user attributes
# that `shardpipe write --attr` puts into zarr.json.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_attrs.py numpy zarr tensorstore
