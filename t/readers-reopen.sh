#!/bin/sh
# readers-reopen.sh - shardpipe write --append continues stores that
# zarr-python 3 and TensorStore wrote, and both read the whole array back.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_reopen.py numpy zarr tensorstore
