#!/bin/sh
# readers-metadata.sh - every zarr.json that `shardpipe write` makes is
# checked field by field against the Zarr v3 core spec and the
# sharding_indexed codec spec.  Needs only Python's standard library.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_metadata.py
