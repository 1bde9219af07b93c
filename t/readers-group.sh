#!/bin/sh
# readers-group.sh - zarr-python opens a group that t/group wrote from
# several threads at once and reads each of its arrays; TensorStore opens
# each array.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_group.py numpy zarr tensorstore
