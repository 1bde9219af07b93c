"""matrix - the configurations the reader conformance tests write with
`shardpipe write`.

Each configuration fixes the geometry, dtype, codec, index location,
dimension names and the kind of input; the input's values come from the
test's seed.  The list is fixed (no randomness here) so that a failing
configuration keeps its number and name from run to run.

Coverage, by section:
  dtype       every dtype, random and incompressible input
  kind        every dtype, constant and sparse input
  rank        ranks 1..5, shapes that divide by neither chunk nor shard
  codec       none, zstd 1/3, gzip 1/6, each with the index at start and end;
              zstd 5 with the content checksum
  unbounded   dim 0 of size 0 (from the input), partial last shard
  one-chunk   one chunk per shard
  chunk-1     a dimension whose chunk size is 1
  big-shard   shards of 4096 chunks (full, and cut by the array's edge)
  blosc       the blosc codec (every backend; the kernel backends take
              zstd only): one dtype of each element size with each shuffle
              mode, in chunks below one blosc block and of many blocks
              (automatic and forced 4096-byte blocks), every compressor,
              levels 0..9; then every other dtype, a chunk below c-blosc's
              128-byte minimum (stored) and an unbounded stack from stdin;
              for the kernel encoder, a stored zstd chunk and chunks of two
              kernel blocks
  gzip        chunks of many 4 KiB segments and 32 KiB blocks (the gzip
              kernel's partition), every kind of input, levels 0 (stored),
              1, 3, 6 and 9, on every backend (the kernel encoder on
              reference, opencl and cuda)
"""

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "float16", "float32", "float64"]
DTYPE_SIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
              "float16": 2, "int32": 4, "uint32": 4, "float32": 4,
              "int64": 8, "uint64": 8, "float64": 8}
CODECS = ["none", "zstd:1", "zstd:3", "gzip:1", "gzip:6"]
BLOSC_SHUFFLES = ["noshuffle", "shuffle", "bitshuffle"]
# The blosc section's codecs: BLOSC_SMALL by shuffle for chunks below one
# block; BLOSC_BIG[element size index][shuffle] for chunks of many blocks.
BLOSC_SMALL = ["blosc:zstd:1:" + sh for sh in BLOSC_SHUFFLES]
BLOSC_BIG = [
    ["blosc:lz4:5:noshuffle", "blosc:zstd:1:shuffle:4096",
     "blosc:zstd:5:bitshuffle"],
    ["blosc:blosclz:3:noshuffle", "blosc:zstd:1:shuffle",
     "blosc:lz4hc:9:bitshuffle"],
    ["blosc:zstd:0:noshuffle", "blosc:zlib:6:shuffle",
     "blosc:zstd:1:bitshuffle:4096"],
    ["blosc:zstd:3:noshuffle:4096", "blosc:lz4:1:shuffle",
     "blosc:zstd:7:bitshuffle"],
]
BLOSC_CODECS = BLOSC_SMALL + [c for row in BLOSC_BIG for c in row
                              if c not in BLOSC_SMALL] + ["blosc:lz4:1:shuffle"]
BLOSC_CODECS = list(dict.fromkeys(BLOSC_CODECS))
# The zstd content checksum (Zarr's zstd "checksum": true).
ZSTD_CHECKSUM = "zstd:5:checksum"
# The gzip section's levels: 0 stores, the others span the effort range.
GZIP_CODECS = ["gzip:0", "gzip:1", "gzip:3", "gzip:6", "gzip:9"]
# Every codec some configuration uses (readers_write probes each backend
# for each).
ALL_CODECS = CODECS + [ZSTD_CHECKSUM] + BLOSC_CODECS + [
    c for c in GZIP_CODECS if c not in CODECS]
KINDS = ["random", "constant", "sparse", "incompressible"]


class Config:
    def __init__(self, section, dtype, shape, chunk, shard, codec="zstd:1",
                 index="end", names=None, kind="random", unbounded=False,
                 stdin=False):
        assert len(shape) == len(chunk) == len(shard)
        assert names is None or len(names) == len(shape)
        self.section = section
        self.dtype = dtype
        self.shape = tuple(shape)      # the array's final shape
        self.chunk = tuple(chunk)      # inner chunk, elements
        self.shard = tuple(shard)      # chunks per shard
        self.codec = codec
        self.index = index
        self.names = tuple(names) if names is not None else None
        self.kind = kind
        self.unbounded = unbounded     # --shape 0,...: size from input
        self.stdin = stdin             # input through a pipe, not --input
        self.number = 0                # set by build()

    @property
    def rank(self):
        return len(self.shape)

    @property
    def shard_shape(self):
        """Zarr's chunk_grid chunk shape: elements per shard."""
        return tuple(c * s for c, s in zip(self.chunk, self.shard))

    @property
    def nbytes(self):
        n = DTYPE_SIZE[self.dtype]
        for s in self.shape:
            n *= s
        return n

    def label(self):
        dims = "x".join(str(s) for s in self.shape)
        return "config %d: %s %s %s %s chunk %s shard %s %s index-%s%s" % (
            self.number, self.section, self.dtype, self.kind, dims,
            ",".join(map(str, self.chunk)), ",".join(map(str, self.shard)),
            self.codec, self.index, " unbounded" if self.unbounded else "")

    def write_args(self):
        """The `shardpipe write` options (without the input and store)."""
        shape = list(self.shape)
        if self.unbounded:
            shape[0] = 0
        args = ["--shape", ",".join(map(str, shape)),
                "--chunk", ",".join(map(str, self.chunk)),
                "--shard", ",".join(map(str, self.shard)),
                "--dtype", self.dtype, "--codec", self.codec,
                "--index-location", self.index]
        if self.names is not None:
            args += ["--names", ",".join(n or "" for n in self.names)]
        return args


def build():
    m = []
    add = m.append

    # Every dtype: random values (rank 3) and incompressible bytes (rank 2,
    # NaN payloads, infinities and subnormals for the float types).
    for i, dt in enumerate(DTYPES):
        add(Config("dtype", dt, (13, 21, 34), (4, 8, 16), (2, 2, 2),
                   codec=CODECS[i % 5], index=("end", "start")[i % 2],
                   names=("t", "y", "x") if i % 3 else None))
        add(Config("dtype", dt, (29, 47), (8, 16), (2, 3),
                   codec=CODECS[(i + 2) % 5], index=("start", "end")[i % 2],
                   names=("row", "col"), kind="incompressible",
                   unbounded=i % 4 == 1))

    # Every dtype: constant (nonzero: -0.0 and NaN with a payload for the
    # floats) and sparse (mostly fill, whole chunks of it).
    for i, dt in enumerate(DTYPES):
        add(Config("kind", dt, (20, 33), (4, 8), (2, 2),
                   codec=CODECS[(i + 1) % 5], index=("end", "start")[i % 2],
                   kind="constant"))
        add(Config("kind", dt, (40, 9, 30), (5, 3, 8), (2, 3, 2),
                   codec=CODECS[(i + 3) % 5], index=("start", "end")[i % 2],
                   names=("z", None, "x"), kind="sparse"))

    # Ranks 1..5, shapes that divide by neither the chunk nor the shard.
    ranks = [
        ((1000,), (64,), (4,)), ((777,), (10,), (7,)),
        ((37, 53), (8, 16), (2, 3)), ((100, 7), (3, 7), (5, 1)),
        ((9, 17, 33), (2, 4, 8), (3, 2, 2)), ((20, 5, 6), (6, 2, 4), (2, 2, 1)),
        ((5, 6, 7, 9), (2, 3, 4, 4), (2, 1, 2, 3)),
        ((7, 4, 5, 6), (3, 2, 2, 5), (1, 2, 3, 1)),
        ((3, 4, 5, 6, 7), (2, 3, 2, 4, 3), (2, 1, 2, 2, 3)),
        ((5, 3, 4, 2, 9), (2, 2, 3, 1, 4), (3, 2, 1, 2, 2)),
    ]
    for i, (shape, chunk, shard) in enumerate(ranks):
        rank = len(shape)
        add(Config("rank", ("uint16", "float32", "int64")[i % 3], shape,
                   chunk, shard, codec=CODECS[i % 5],
                   index=("end", "start")[i % 2],
                   names=tuple("abcde"[:rank]) if i % 2 else None,
                   unbounded=i % 2 == 1, stdin=i % 4 == 3))

    # Every codec and level with the index at each end.
    for i, codec in enumerate(CODECS):
        for j, index in enumerate(("end", "start")):
            add(Config("codec", ("int16", "float64")[j], (45, 130), (8, 32),
                       (3, 2), codec=codec, index=index,
                       kind=("random", "sparse")[(i + j) % 2]))
    add(Config("codec", "uint16", (45, 130), (8, 32), (3, 2),
               codec=ZSTD_CHECKSUM, kind="random"))

    # Unbounded dim 0: a partial last shard epoch, fewer rows than one
    # shard, rows that end on a chunk but not a shard boundary, stdin.
    add(Config("unbounded", "uint16", (11, 40, 24), (2, 8, 8), (4, 2, 3),
               codec="zstd:1", names=("t", "y", "x"), unbounded=True,
               stdin=True))
    add(Config("unbounded", "float32", (5, 16), (4, 16), (4, 1),
               codec="gzip:1", index="start", unbounded=True))
    add(Config("unbounded", "int8", (12, 10), (3, 4), (3, 2), codec="none",
               unbounded=True, stdin=True))
    add(Config("unbounded", "uint32", (1, 7, 7), (2, 3, 3), (2, 2, 2),
               codec="zstd:3", index="start", unbounded=True))

    # One chunk per shard.
    add(Config("one-chunk", "uint16", (17, 30, 25), (4, 8, 8), (1, 1, 1),
               codec="zstd:3", names=("t", "y", "x")))
    add(Config("one-chunk", "float64", (250,), (16,), (1,), codec="gzip:6",
               index="start"))

    # A dimension with chunk size 1 (first, last, middle).
    add(Config("chunk-1", "uint16", (10, 16, 20), (1, 16, 16), (4, 1, 2),
               codec="zstd:1", names=("zeit", "λ", "x")))
    add(Config("chunk-1", "int32", (30, 9), (8, 1), (2, 4), codec="gzip:1",
               index="start"))
    add(Config("chunk-1", "float32", (4, 6, 5, 7), (2, 1, 3, 4), (1, 3, 2, 2),
               codec="none", unbounded=True))

    # Shards of 4096 chunks: one full shard, one cut by the array's edge,
    # and a long 1-d array whose second shard is nearly empty.
    add(Config("big-shard", "uint8", (64, 512), (1, 8), (64, 64),
               codec="zstd:1"))
    add(Config("big-shard", "uint16", (30, 31, 29), (2, 2, 2), (16, 16, 16),
               codec="gzip:1", index="start", kind="sparse"))
    add(Config("big-shard", "float32", (4 * 4096 + 3,), (4,), (4096,),
               codec="none", unbounded=True))

    # blosc: one dtype per element size, each shuffle mode, a chunk below
    # one blosc block (512 elements) and one of many (64 Ki elements: 2..16
    # automatic blocks at zstd level 1, 16..128 forced 4096-byte ones).
    for i, dt in enumerate(["uint8", "int16", "float32", "float64"]):
        for j, sh in enumerate(BLOSC_SHUFFLES):
            n = 3 * i + j
            add(Config("blosc", dt, (13, 21, 34), (4, 8, 16), (2, 2, 2),
                       codec=BLOSC_SMALL[j], index=("end", "start")[n % 2],
                       names=("t", "y", "x") if n % 3 else None,
                       kind=KINDS[n % 4]))
            add(Config("blosc", dt, (70, 1500), (64, 1024), (1, 2),
                       codec=BLOSC_BIG[i][j], index=("start", "end")[n % 2],
                       kind=KINDS[(n + 1) % 4], unbounded=n % 4 == 3))
    # The other dtypes, byte shuffle (bit shuffle for the 1-byte ones).
    for i, dt in enumerate(["bool", "int8", "int32", "int64", "uint16",
                            "uint32", "uint64", "float16"]):
        add(Config("blosc", dt, (20, 33), (4, 8), (2, 2),
                   codec=BLOSC_SMALL[2 if DTYPE_SIZE[dt] == 1 else 1],
                   index=("end", "start")[i % 2], kind=KINDS[i % 4]))
    # 30-byte chunks: below c-blosc's minimum, stored behind the header.
    add(Config("blosc", "uint16", (9, 10), (3, 5), (2, 2),
               codec="blosc:lz4:1:shuffle", kind="random"))
    # A microscopy-like unbounded stack through a pipe.
    add(Config("blosc", "uint16", (11, 64, 64), (2, 32, 32), (4, 2, 2),
               codec="blosc:zstd:1:shuffle", names=("t", "y", "x"),
               unbounded=True, stdin=True))
    # For the kernel encoder (the kernel backends write blosc:zstd): a
    # zstd chunk below 128 bytes (stored), and 320000-byte chunks of two
    # 256 KiB kernel blocks (the last partial, one stream), compressible
    # and incompressible.
    add(Config("blosc", "uint16", (9, 10), (3, 5), (2, 2),
               codec="blosc:zstd:1:bitshuffle", kind="random"))
    add(Config("blosc", "float64", (6, 40000), (2, 20000), (2, 1),
               codec="blosc:zstd:1:shuffle", kind="sparse"))
    add(Config("blosc", "float64", (4, 40000), (2, 20000), (1, 2),
               codec="blosc:zstd:1:bitshuffle", index="start",
               kind="incompressible"))

    # gzip: 208000-byte chunks (51 segments, 7 blocks, the last partial),
    # edge chunks on both inner dims, each kind and level once.
    for i, codec in enumerate(GZIP_CODECS):
        add(Config("gzip", ("uint16", "float32")[i % 2],
                   (9, 230, 290) if i % 2 == 0 else (9, 115, 290),
                   (4, 100, 260) if i % 2 == 0 else (4, 50, 260),
                   (2, 2, 1), codec=codec, index=("end", "start")[i % 2],
                   kind=KINDS[i % 4], unbounded=i == 4))

    for c in m:
        assert c.codec in ALL_CODECS, c.codec
    for i, c in enumerate(m):
        c.number = i + 1
    return m
