"""The package's namespace is what it exports: every public name of
``shardpipe`` is in ``__all__`` and every name of ``__all__`` is there (no
``os``, ``json``, ``Any``, ``dataclass`` ... left over from its imports),
and its version is the library's."""

import re

import shardpipe

# Submodules that are public attributes of the package once imported
# (by another test): shardpipe.dask (design §30); the extension is the
# private _shardpipe.
SUBMODULES: set[str] = {"dask"}


def test_public_names_are_all():
    public = {n for n in dir(shardpipe) if not n.startswith("_")}
    exported = {n for n in shardpipe.__all__ if not n.startswith("__")}
    assert public - SUBMODULES == exported, (
        "public but not in __all__: %s; in __all__ but missing: %s"
        % (sorted(public - exported - SUBMODULES),
           sorted(exported - public)))


def test_all_names_exist_once():
    assert len(shardpipe.__all__) == len(set(shardpipe.__all__))
    for n in shardpipe.__all__:
        assert hasattr(shardpipe, n), n


def test_version_is_the_library_version():
    assert "__version__" in shardpipe.__all__
    assert isinstance(shardpipe.library_version, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", shardpipe.library_version)
    assert shardpipe.__version__ == shardpipe.library_version
