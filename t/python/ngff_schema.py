"""ngff_schema - OME-NGFF 0.5's strict JSON schemas (the copy the
ngff-zarr package carries), shared by t/python/readers_plate.py and the
Python package's tests (python/tests/test_plate.py): the spec's own
schemas judge what shardpipe wrote, not a copy of its rules."""

import json
import os


def validators():
    """A jsonschema validator of each strict_KIND.schema of 0.5, with the
    schemas it refers to in its registry."""
    import jsonschema
    import ngff_zarr
    import referencing
    from referencing.jsonschema import DRAFT202012
    base = os.path.join(os.path.dirname(ngff_zarr.__file__), "spec", "0.5",
                        "schemas")
    reg = referencing.Registry()
    for f in os.listdir(base):
        with open(os.path.join(base, f)) as fh:
            s = json.load(fh)
        reg = reg.with_resource(s["$id"], DRAFT202012.create_resource(s))
    out = {}
    for kind in ("plate", "well", "image"):
        with open(os.path.join(base, "strict_%s.schema" % kind)) as fh:
            out[kind] = jsonschema.Draft202012Validator(json.load(fh),
                                                        registry=reg)
    return out
