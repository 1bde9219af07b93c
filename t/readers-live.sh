#!/bin/sh
# readers-live.sh - zarr-python polling a store while `shardpipe write`
# streams into it sees only valid arrays of whole shards equal to the input.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_live.py numpy zarr tensorstore
