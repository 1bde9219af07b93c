#!/bin/sh
# readers-stream.sh - through the C API (ctypes): zarr-python 3 and
# TensorStore read a store while its stream is open, after a flush, and
# after an append past a bounded dim 0.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_stream.py numpy zarr tensorstore
