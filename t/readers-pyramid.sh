#!/bin/sh
# readers-pyramid.sh - pyramids against a NumPy model, their OME-NGFF
# metadata against the 0.5 schema, ome-zarr-models and ome-zarr.
. "${top_srcdir:-.}/t/python/run-python.sh"
run_python readers_pyramid.py numpy zarr ome_zarr ome_zarr_models \
	jsonschema ngff_zarr
