#!/bin/sh
# readers-plate.sh - a plate t/plate wrote (fields in any order, two at
# once, a pyramid, empty wells) against the OME-NGFF 0.5 schemas, in
# ome-zarr-models and ome-zarr, every field read by zarr-python.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_plate.py numpy zarr ome_zarr ome_zarr_models \
	jsonschema ngff_zarr
